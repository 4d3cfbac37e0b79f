package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGlobKill9DuringPointerCreation: kill -9 while a glob feed creates the
// pointers of hundreds of new files at once (their epochs lines and
// directory entries group-committed, each new pointer written with one
// msync, its commits msynced at most once a second while it reads): after 4
// kills at varying moments, each followed by more new files, a last run
// delivers every line of every file, in order; the exactlyOnce output is
// byte-identical per file; every pointer file holds a valid record whose
// epoch has a line in the epochs file (write-ahead), and no pointer was
// found unusable.
func TestGlobKill9DuringPointerCreation(t *testing.T) {
	e := newEnv(t, fmt.Sprintf(globConfig, 1024, 300000, 86400000)+`  - name: exact
    feed: app
    type: file
    path: ./exact.log
    exactlyOnce: true
    fsync: never
`)
	in := e.path("in")
	const per = 40
	files := 0
	add := func(n int) {
		for i := 0; i < n; i++ {
			writeFileLines(t, filepath.Join(in, fmt.Sprintf("d%d", files%7), fmt.Sprintf("n%04d.log", files)), fmt.Sprintf("n%04d", files), 0, per)
			files++
		}
	}
	add(300)
	for k, after := range []time.Duration{40 * time.Millisecond, 120 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond} {
		d := e.spawn()
		time.Sleep(after)
		d.kill()
		if strings.Contains(d.log(), "pointer unusable") {
			t.Fatalf("kill %d: a pointer was found unusable:\n%s", k, tail(d.log(), 3000))
		}
		add(150)
	}
	d := e.start()
	out := e.path("out.log")
	want := files * per
	waitUntil(t, "every line", 120*time.Second, func() bool {
		n := 0
		for _, ns := range perTag(t, out) {
			seen := map[int]bool{}
			for _, v := range ns {
				seen[v] = true
			}
			n += len(seen)
		}
		return n >= want
	})
	d.waitSettled(60 * time.Second)
	d.stop()
	for _, r := range e.runs {
		if strings.Contains(r.log(), "pointer unusable") {
			t.Fatalf("a pointer was found unusable:\n%s", tail(r.log(), 3000))
		}
	}
	got := perTag(t, out)
	dups := 0
	for f := 0; f < files; f++ {
		tag := fmt.Sprintf("n%04d", f)
		seen := map[int]bool{}
		maxSeen := -1
		for _, v := range got[tag] {
			if seen[v] {
				dups++
				continue
			}
			if v != maxSeen+1 {
				t.Fatalf("%s: first delivery of %d after %d (gap or order)", tag, v, maxSeen)
			}
			seen[v], maxSeen = true, v
		}
		if len(seen) != per {
			t.Fatalf("%s: %d distinct lines, want %d", tag, len(seen), per)
		}
	}
	perFile := map[string]*bytes.Buffer{}
	exact, _ := os.ReadFile(e.path("exact.log"))
	for _, l := range bytes.SplitAfter(exact, []byte{'\n'}) {
		if len(l) == 0 {
			continue
		}
		tag, _, _ := bytes.Cut(l, []byte{' '})
		if perFile[string(tag)] == nil {
			perFile[string(tag)] = &bytes.Buffer{}
		}
		perFile[string(tag)].Write(l)
	}
	for f := 0; f < files; f++ {
		tag := fmt.Sprintf("n%04d", f)
		in, _ := os.ReadFile(filepath.Join(in, fmt.Sprintf("d%d", f%7), tag+".log"))
		if got := perFile[tag]; got == nil || !bytes.Equal(got.Bytes(), in) {
			t.Fatalf("exactlyOnce output of %s not byte-identical to its input", tag)
		}
	}
	// Write-ahead: every epoch a pointer holds has a line in the epochs file.
	logged := map[string]bool{}
	ef, err := os.Open(e.path("state/feeds/app.epochs"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(ef)
	for sc.Scan() {
		var l struct {
			Epoch string `json:"epoch"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			logged[l.Epoch] = true
		}
	}
	ef.Close()
	ptrs, _ := filepath.Glob(e.path("state/feeds/app/*.ptr"))
	if len(ptrs) < files {
		t.Fatalf("%d pointer files for %d files", len(ptrs), files)
	}
	for _, p := range ptrs {
		rec, ok := showPointer(t, p)
		if !ok || !logged[rec.Epoch] {
			t.Fatalf("pointer %s holds epoch %s, which has no line in the epochs file", filepath.Base(p), rec.Epoch)
		}
	}
	t.Logf("%d files, 4 kills during pointer creation: %d lines, none missing, %d re-delivered to the plain sink, exactlyOnce byte-identical per file, %d pointers all logged",
		files, want, dups, len(ptrs))
}
