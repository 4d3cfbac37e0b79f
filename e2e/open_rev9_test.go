//go:build openfindings

// Open findings of the ninth session's reviews (issue 13 closing note):
// each test here fails on the product as it is, kept out of the default
// build until fixed (go test -tags openfindings ./e2e -run TestRev9);
// a fixed finding moves back to review9b_test.go or review9c_test.go.

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRev9CXARenamedWithinGlobThenNarrowed: DESIGN §10 "A rename within the
// glob keeps the stream"; §12 "if its path changed … the new path starts as
// a new feed" (README: a changed path "stops reading the old one: no loss
// is counted"); §7/§4 "Nothing green over a loss": lossless false only for
// a counted loss — and a loss counted must have happened. The glob ./in/*
// reads a.txt (5 lines) and a.log (5 lines); while running both are renamed
// within the glob (a.txt -> b.txt, a.log -> z.txt), read to their end,
// committed, settled. The path is then narrowed to ./in/*.log (by a
// reload, or at a stopped restart): b.txt and z.txt, still on disk, read
// to their end, are no longer matched — exactly the case this change
// stopped counting (TestAud4GXReloadGlobNarrowed), except that the file
// is not at the path its stream was first matched under. unmatchedAt
// looks only at that first path (l.s.first), finds no file there, and the
// file is counted "glob file gone while stopped".
// Expected: lostTails 0, lossless true, no losses.jsonl entry.
// Observed: lostTails 2, lossless false, two losses.jsonl entries "glob
// file gone while stopped" in every mode, every run (also by an exclude;
// also at 762ac0c, before this change: the fix covers only a file still at
// its first path).
func TestRev9CXARenamedWithinGlobThenNarrowed(t *testing.T) {
	for _, mode := range []string{"reload", "restart", "exclude-restart"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, rev9cCfg("./state", "./in/*", "    scanIntervalMillis: 500\n"))
			in := e.path("in")
			writeFileLines(t, filepath.Join(in, "a.txt"), "a", 0, 5)
			writeFileLines(t, filepath.Join(in, "a.log"), "l", 0, 5)
			writeFileLines(t, filepath.Join(in, "keep.log"), "k", 0, 5)
			d := e.start()
			d.waitFor("15 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 15 })
			if err := os.Rename(filepath.Join(in, "a.txt"), filepath.Join(in, "b.txt")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(in, "a.log"), filepath.Join(in, "z.txt")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // three rescans: both renames seen within the glob
			g := getGlobStatus(t, d)
			var rows []string
			for _, f := range g.Feeds[0].Files {
				rows = append(rows, filepath.Base(f.Path)+":"+f.State)
			}
			t.Logf("files after the renames: %v", rows)
			d.waitSettled(20 * time.Second)
			if mode == "exclude-restart" {
				// The same narrowing by an exclude (excludedAt before
				// this change had the same first-path-only look).
				d = rev9cChangePath(t, e, d, "restart", rev9cCfg("./state", "./in/*", "    scanIntervalMillis: 500\n    exclude: [./in/*.txt]\n"))
			} else {
				d = rev9cChangePath(t, e, d, mode, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 500\n"))
			}
			writeFileLines(t, filepath.Join(in, "keep.log"), "k", 5, 1)
			waitUntil(t, "k 5", 20*time.Second, func() bool { return len(perTag(t, e.path("out.log"))["k"]) >= 6 })
			r := d.waitSettled(20 * time.Second)
			led, _ := os.ReadFile(e.path("state/losses.jsonl"))
			if f := r.Feeds[0]; f.LostTails != 0 || !f.Lossless || len(led) != 0 {
				t.Errorf("%s narrowing ./in/* to ./in/*.log after a.txt->b.txt and a.log->z.txt were renamed within the glob (both read to their end, committed, still on disk): lostTails %d lostBytes %d lossless %v; want 0, 0, true (no line skipped; the same narrowing without the rename counts nothing)\nlosses.jsonl: %s",
					mode, f.LostTails, f.LostBytes, f.Lossless, led)
			}
			got := perTag(t, e.path("out.log"))
			if len(got["a"]) != 5 || len(got["l"]) != 5 {
				t.Errorf("lines a %d l %d, want 5 5", len(got["a"]), len(got["l"]))
			}
		})
	}
}

// TestRev9CXAWidenedPastSymlinkedDir: DESIGN §10 ("**" matches any number
// of directories; identity is the file key + fingerprint; a file reached
// by several matching paths is one stream), §12 a changed path, §7
// lossless false only for a loss that happened. The glob ./in/link/*.log
// (./in/link a symlink to ./real, the glob's root) reads a.log to its end,
// committed; the path is changed (reload / stopped restart) to
// ./in/**/*.log, which matches ./in/link/a.log by name, but the walk does
// not descend the symlinked directory. Then 2 lines are appended to a.log.
// Expected: either a.log is still read (its 2 new lines delivered, no
// loss), or it is no longer matched (no loss, at most a WARN). Counting a
// lost tail for a file read to its end and still there is a loss that
// did not happen; not reading lines appended to a file the glob matches
// by name is a silent gap unless counted.
// Observed: lostTails 1, lossless false (a losses.jsonl entry), and the 2
// appended lines are never read; every run, reload and restart; also at
// 762ac0c. unmatchedAt asks the pattern (matched by name), the walk never
// reaches the file.
func TestRev9CXAWidenedPastSymlinkedDir(t *testing.T) {
	for _, mode := range []string{"reload", "restart"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, rev9cCfg("./state", "./in/link/*.log", "    scanIntervalMillis: 500\n"))
			real := e.path("real")
			p := filepath.Join(real, "a.log")
			writeFileLines(t, p, "a", 0, 5)
			writeFileLines(t, e.path("in/b.log"), "b", 0, 1)
			if err := os.Symlink(real, e.path("in/link")); err != nil {
				t.Fatal(err)
			}
			d := e.start()
			d.waitFor("5 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 5 })
			d = rev9cChangePath(t, e, d, mode, rev9cCfg("./state", "./in/**/*.log", "    scanIntervalMillis: 500\n"))
			waitUntil(t, "b.log read", 20*time.Second, func() bool { return len(perTag(t, e.path("out.log"))["b"]) >= 1 })
			writeFileLines(t, p, "a", 5, 2)
			time.Sleep(2 * time.Second)
			r := d.waitSettled(20 * time.Second)
			got := perTag(t, e.path("out.log"))["a"]
			f := r.Feeds[0]
			led, _ := os.ReadFile(e.path("state/losses.jsonl"))
			if f.LostTails != 0 || !f.Lossless {
				t.Errorf("%s ./in/link/*.log -> ./in/**/*.log (link -> ../real; a.log read to its end, still there): lostTails %d lossless %v, a lines %v; want no loss (a.log either still read or no longer matched)\nlosses.jsonl: %s", mode, f.LostTails, f.Lossless, got, led)
			} else if len(got) != 7 {
				t.Logf("%s: a.log no longer read (a lines %v), no loss counted", mode, got)
			}
		})
	}
}

// TestRev9CXCSymlinkTargetRewriteStalls: DESIGN §4 "At every poll …
// when the size or mtime changed since the last check, re-verify the
// fingerprint …; On a change, open the file at the path at once"; "a poll
// (pollIntervalMillis, default 250) covers file systems where events don't
// arrive"; §10 the rescan every scanIntervalMillis is a fallback for
// discovery; symlinks followed to regular files. The glob ./in/*.log
// matches in/l.log, a symlink to real/a.log (a directory no fsnotify watch
// covers); real/a.log is rewritten in place to the same size, other first
// bytes (a replacement). Observed: the feed says BEHIND (honest since this
// change), but the new lines are delivered only at the next rescan (60 s
// here; ~3 s with scanIntervalMillis 3000): the source's poll sees the
// change, the glob does not act on it. Expected: delivered within a few
// polls (5 s allowed). Fails on the first rewrite, every run.
func TestRev9CXCSymlinkTargetRewriteStalls(t *testing.T) {
	e := newEnv(t, rev9cCfg("./state", "./in/*.log", "    scanIntervalMillis: 60000\n"))
	p := e.path("real/a.log")
	writeFileLines(t, p, "r00", 0, 3)
	os.MkdirAll(e.path("in"), 0o755)
	if err := os.Symlink(p, e.path("in/l.log")); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	out := e.path("out.log")
	d.waitFor("3 lines settled", 20*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Acknowledged >= 3 })
	bad := 0
	for i := 1; i <= 5; i++ {
		time.Sleep(30 * time.Millisecond)
		tag := fmt.Sprintf("r%02d", i)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "%s 0\n%s 1\n%s 2\n", tag, tag, tag)
		f.Close()
		r, err := d.status()
		if err != nil {
			t.Fatal(err)
		}
		if r.Settled && len(perTag(t, out)[tag]) < 3 {
			bad++
		}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && len(perTag(t, out)[tag]) < 3 {
			time.Sleep(20 * time.Millisecond)
		}
		if n := len(perTag(t, out)[tag]); n < 3 {
			g := getGlobStatus(t, d)
			r, _ := d.status()
			data, _ := os.ReadFile(out)
			t.Fatalf("same-size rewrite %d of real/a.log (matched as the symlink in/l.log): %d of its 3 lines delivered 5 s later: state %s settled %v lostTails %d lostBytes %d lossless %v, files %+v; out.log %q — DESIGN §4 a same-size rewrite with other first bytes is a replacement, read from its start; §2 every line delivered unless a loss is counted",
				i, n, r.Feeds[0].State, r.Settled, r.Feeds[0].LostTails, r.Feeds[0].LostBytes, r.Feeds[0].Lossless, g.Feeds[0].Files, data)
		}
		d.waitSettled(20 * time.Second)
	}
	if bad > 0 {
		t.Errorf("%d of 5 reports right after a same-size rewrite of the symlinked match's target said settled with the new lines undelivered", bad)
	}
}
