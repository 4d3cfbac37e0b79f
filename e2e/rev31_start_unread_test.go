package e2e

// Thirty-first session: found by the kill -9 property run
// (TestAud11AOKGlobKill9Property, seed 1796536884841194830: kill 0 right
// after the first start was ready, a.log and sub/b.log rotated while down:
// their first 8 and 4 lines never delivered, lossless true in one run of
// six, masked by an unrelated overcount in the others). Older than the
// session's changes.

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRev31GlobFirstRunKilledBeforeAdoptionRotatedWhileDown: DESIGN §2
// "never a gap", §4 "Restart after rotation: every generation still on
// disk", "Nothing green over a loss". A glob feed ./logs/*.log over 200
// files of 3 lines each (maxOpenFiles 2) started for the first time and
// killed -9 as soon as its first line is in the sink: most files were
// matched (filesTracked) but their streams never opened, so neither a
// pointer nor an "adopted" epochs line names them. One of those, f.log, is
// rotated while tailfeed is down (f.log → f.log.1, a new f.log with 2
// lines). Observed: the restart reads the new f.log only; f.log.1's 3
// lines are never delivered and nothing is counted (lossless true). The
// first run knew f.log's key at its start; nothing of that reached disk
// before its stream opened.
// Fixed: the first scan writes the unread list before any stream starts
// (startUnreadLocked), and a stop lists a stream whose new pointer was not
// adopted yet; the restart finds the listed f.log gone from the glob and
// beside its path (f.log.1, by key and first bytes) and reads it there
// (readListedBeside), as a file renamed out of the glob while running is:
// every line once, lossless. Cases: a kill -9 at the first line in the sink, at once after
// /readyz answered 200, and a clean stop at the first line; and the file
// deleted while down after a kill -9: counted (lostTails 1, 24 bytes); and
// a copytruncate while down: its copy f.log.1 is read (listedCopyBeside).
func TestRev31GlobFirstRunKilledBeforeAdoptionRotatedWhileDown(t *testing.T) {
	for _, v := range []string{"kill", "killReady", "stop", "killDelete", "killCopytruncate"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			rev31FirstRunRotated(t, v)
		})
	}
}

func rev31FirstRunRotated(t *testing.T, v string) {
	e := newEnv(t, `dataDir: ./state
status: {listen: "{{ADDR}}"}
feeds:
  - name: app
    path: ./logs/*.log
    readStrategy: COMMITTED
    pollIntervalMillis: 50
    maxOpenFiles: 2
processors:
  - {name: once, feed: app, type: file, path: ./out/once.jsonl, exactlyOnce: true, format: json}
`)
	if err := os.MkdirAll(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		appendTo(t, e.path(fmt.Sprintf("logs/f%03d.log", i)), fmt.Sprintf("f%03d #0\nf%03d #1\nf%03d #2\n", i, i, i))
	}
	d := e.start()
	if v == "killReady" {
		// Ready (DESIGN §12 /readyz: "from the first moment every feed
		// has opened its file or is waiting for it"): the glob's first
		// scan is done. Before it, nothing was known of the files.
		waitUntil(t, "/readyz 200", 20*time.Second, func() bool { code, _, err := d.get("/readyz"); return err == nil && code == 200 })
	} else {
		waitUntil(t, "a first line in the sink", 20*time.Second, func() bool { return len(rev31Lines(e.path("out/once.jsonl"))) > 0 })
	}
	if v == "stop" {
		d.stop()
	} else {
		d.kill()
	}
	adopted := map[string]bool{}
	b, _ := os.ReadFile(e.path("state/feeds/app.epochs"))
	for _, l := range strings.Split(string(b), "\n") {
		var v struct{ Path, Reason string }
		if json.Unmarshal([]byte(l), &v) == nil && v.Path != "" {
			adopted[v.Path] = true
		}
	}
	victim := ""
	for i := 199; i >= 0; i-- {
		p := e.path(fmt.Sprintf("logs/f%03d.log", i))
		if !adopted[p] {
			victim = p
			break
		}
	}
	if victim == "" {
		t.Skip("every file was adopted before the kill: nothing to show")
	}
	key := strings.TrimSuffix(victim[strings.LastIndex(victim, "/")+1:], ".log")
	if v == "killDelete" {
		// Deleted while down: counted (lostTails 1, its 24 bytes).
		if err := os.Remove(victim); err != nil {
			t.Fatal(err)
		}
		d = e.start()
		r := d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
		if f := r.Feeds[0]; r.Lossless || f.LostTails != 1 || f.LostBytes != 24 {
			t.Errorf("%s deleted while down: lossless %v lostTails %d lostBytes %d, want false 1 24", key, r.Lossless, f.LostTails, f.LostBytes)
		}
		return
	}
	if v == "killCopytruncate" {
		// logrotate's copytruncate: the copy f.log.1 holds the 3 lines,
		// f.log (its key) is cut and written again.
		b, err := os.ReadFile(victim)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(victim+".1", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(victim, 0); err != nil {
			t.Fatal(err)
		}
	} else if err := os.Rename(victim, victim+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, victim, key+" #3\n"+key+" #4\n")
	d = e.start()
	r := d.waitFor("settled", 60*time.Second, func(r *report) bool { return r.Settled })
	got := map[string]int{}
	var order []string // the key's lines in the sink's order
	for _, l := range rev31Lines(e.path("out/once.jsonl")) {
		got[l]++
		if strings.HasPrefix(l, key+" #") {
			order = append(order, l)
		}
	}
	if !slices.IsSorted(order) {
		t.Errorf("%s's lines out of order (DESIGN §10 Order: the file previously at the path first): %v", key, order)
	}
	var miss []string
	for i := range 5 {
		if l := fmt.Sprintf("%s #%d", key, i); got[l] == 0 {
			miss = append(miss, l)
		}
	}
	if len(miss) > 0 || !r.Lossless {
		t.Errorf("%s rotated while down: %v never delivered, lossless %v", key, miss, r.Lossless)
	}
	for l, n := range got {
		if n > 1 {
			t.Errorf("%q delivered %d times", l, n)
		}
	}
}

func rev31Lines(path string) []string {
	objs, _ := aud11AReadOnce(path)
	var out []string
	for _, o := range objs {
		out = append(out, o.Line)
	}
	return out
}
