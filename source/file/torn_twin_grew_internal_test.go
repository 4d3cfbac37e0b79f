package file

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
)

func twinGzip(t *testing.T, parts ...string) (full []byte, cut int) {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	for i, p := range parts {
		zw.Write([]byte(p))
		if i == 0 {
			if err := zw.Flush(); err != nil {
				t.Fatal(err)
			}
			cut = b.Len()
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), cut
}

// heldTwinTorn makes a source reading twin (s.cur, beside the input in)
// with the torn .gz gz (its first bytes torn) noted torn and held as the
// twin's, looked at once (held, not read); the caller closes s.
func heldTwinTorn(t *testing.T, in, twin, gz string, torn []byte) *Source {
	t.Helper()
	if err := os.WriteFile(gz, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Feed: "app", Path: in, Strategy: Committed, MaxLine: 1 << 16, RotatedNames: []string{"app.log.*"}}, nil)
	tdev, tino, _ := fileutil.DevInoPath(twin)
	if s.cur = s.openGen(genFile{path: twin, dev: tdev, ino: tino}); s.cur == nil {
		t.Fatal("twin not opened")
	}
	dev, ino, _ := fileutil.DevInoPath(gz)
	g := genFile{path: gz, dev: dev, ino: ino, scanned: time.Now()}
	s.noteTwin(&g, untoldTwin(gz, s.known))
	if g.heldTwin == ([2]uint64{}) {
		head, _ := gzHead(gz)
		t.Fatalf("set-up: not held as the twin's (torn head %q)", head)
	}
	s.noteTorn(g)
	s.retryTorn()
	if len(s.torn) != 1 || s.torn[0].heldTwin == ([2]uint64{}) || len(s.old) != 0 {
		t.Fatalf("first look: %d torn, %d read; want 1 held, none read", len(s.torn), len(s.old))
	}
	return s
}

// closeAll closes the source's readers (tests that made it by hand).
func (s *Source) closeAll() {
	for _, r := range append(append([]*reader{s.cur}, s.next...), s.old...) {
		if r != nil {
			r.close()
		}
	}
}

// Review 44 F1 (introduced by the first version of the re-check after the
// decompression, 316d32c): the held twin (the read file, s.cur) is being compressed by gzip while
// the application still appends to it. Its twinHead is taken in followTwin;
// the twin grows after that (gzip reads the new line too) and gzip ends
// before readGz. The .gz is every byte of the twin — its compressed copy —
// but tellTwin(hw.head) compares with the stale twinHead, lets heldTwin go,
// and (the twin reader's fingerprint refreshed only later in check()) reads
// the .gz beside the current file: the twin's lines delivered twice.
func TestTornGzTwinGrewBetweenItsHeadAndTheRead(t *testing.T) {
	for _, deleteTwin := range []bool{false, true} {
		t.Run(map[bool]string{false: "gzip-k", true: "gzip-unlinks"}[deleteTwin], func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "app.log")
			twin := in + ".2"
			const a, b = "# app started\nb-0\n", "b-1\n"
			if err := os.WriteFile(twin, []byte(a), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(in, []byte("# app started\nc-0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			full, cut := twinGzip(t, "# app started\n", "b-0\n"+b)
			s := heldTwinTorn(t, in, twin, twin+".gz", full[:cut])
			defer s.closeAll()
			tornLooked = func(p string) {
				// the app appends one line to the rotated file, gzip reads it and ends
				f, err := os.OpenFile(twin, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Error(err)
					return
				}
				f.Write([]byte(b))
				f.Close()
				if err := os.WriteFile(p, full, 0o644); err != nil {
					t.Error(err)
				}
				if deleteTwin {
					os.Remove(twin)
				}
			}
			defer func() { tornLooked = nil }()
			s.retryTorn()
			if len(s.old) != 0 {
				t.Errorf("the twin's own compressed copy (every byte the read file's, %q) read beside it: its %d lines delivered twice (lostTails %d)",
					s.old[0].head, bytes.Count(s.old[0].head, []byte("\n")), s.LostTails())
			}
		})
	}
}

// Review 44 F2 (older): the same, the twin growing after one look's
// followTwin and gzip ending and unlinking it before the next look (a poll
// interval, not an instant): twinHead cannot be taken again (the twin is
// gone from its name), the complete .gz is longer than it, heldTwin is let
// go (followTwin's gzHead already), and the read file's fingerprint is
// refreshed only after retryTorn in check(): the .gz is read beside it.
func TestTornGzTwinGrewThenUnlinkedBetweenLooks(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	twin := in + ".2"
	const a, b = "# app started\nb-0\n", "b-1\n"
	if err := os.WriteFile(twin, []byte(a), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte("# app started\nc-0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	full, cut := twinGzip(t, "# app started\n", "b-0\n"+b)
	gz := twin + ".gz"
	s := heldTwinTorn(t, in, twin, gz, full[:cut])
	defer s.closeAll()
	f, _ := os.OpenFile(twin, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte(b))
	f.Close()
	if err := os.WriteFile(gz, full, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(twin)
	s.retryTorn()
	if len(s.old) != 0 {
		t.Errorf("the twin's compressed copy %q read beside the twin (held as s.cur, its fd still reads them): delivered twice", s.old[0].head)
	}
}
