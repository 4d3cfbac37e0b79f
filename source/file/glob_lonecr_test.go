package file_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// loneCRRig runs a glob rig over a directory holding app.log, "a 0\n"
// then a last line ended by a lone '\r' ("last\r").
func loneCRRig(t *testing.T) (r *globRig, dir, app string) {
	t.Helper()
	dir = t.TempDir()
	app = filepath.Join(dir, "app.log")
	if err := os.WriteFile(app, []byte("a 0\nlast\r"), 0o644); err != nil {
		t.Fatal(err)
	}
	return newGlobRig(t, dir, t.TempDir(), filepath.Join(dir, "*.log"), 16), dir, app
}

// Review 36 F: a file whose last line ends in a lone '\r' (held while
// tailing: it may be the first half of "\r\n") is rotated and a new file
// takes its path. DESIGN §10 "Order": the old file at a path before the
// next; the old file's last line was written before the rotation, so it
// comes before the new file's first line. Before the fix the held line was
// published only when the old file was left (rotateWaitMillis after the
// rotation, or closed as inactive), after the new file's first lines.
func TestGlobLoneCRLastLineBeforeNextFile(t *testing.T) {
	for _, to := range []string{"app.log.1", "app-1.log"} { // out of the glob, within it
		t.Run(to, func(t *testing.T) {
			t.Parallel()
			r, dir, app := loneCRRig(t)
			defer r.stop()
			r.waitLines(1, 10*time.Second)
			time.Sleep(200 * time.Millisecond) // the stream caught up, "last\r" held
			if err := os.Rename(app, filepath.Join(dir, to)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(app, []byte("b 0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r.waitLines(3, 10*time.Second)
			time.Sleep(300 * time.Millisecond)
			r.mu.Lock()
			var got []string
			for _, l := range r.order {
				got = append(got, l[len(dir)+1:])
			}
			r.mu.Unlock()
			// (A stream's lines carry the path it was first found at.)
			want := []string{"app.log: a 0", "app.log: last", "app.log: b 0"}
			if !slices.Equal(got, want) {
				t.Fatalf("lines in the order published %q, want %q: the old file's last line (ended by a lone \\r) after the next file's first", got, want)
			}
		})
	}
}

// An idle file whose last line ends in a lone '\r' closed as inactive
// (closeInactiveMillis) is not left: it is reopened when it grows, and the
// line stays held until its writer's next byte (review 41: taking the
// '\r' at that close gave the line two positions — after the '\r', and
// after the "\r\n" a restart reads once the '\n' came — so an
// exactlyOnce sink applied it twice after a kill between). The '\n' then
// completes the terminator: the line once, no empty line.
func TestGlobLoneCRHeldByAFileClosedInactive(t *testing.T) {
	t.Parallel()
	r, _, app := loneCRRig(t)
	defer r.stop()
	r.waitLines(1, 10*time.Second)
	time.Sleep(time.Second) // closed as inactive (300 ms)
	if n := r.count(); n != 1 {
		t.Fatalf("%d lines before the writer's next byte, want 1 (\"last\\r\" held)", n)
	}
	f, err := os.OpenFile(app, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\nnext\n")
	f.Close()
	r.waitLines(3, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	r.mu.Lock()
	got := slices.Clone(r.lines[app])
	r.mu.Unlock()
	if want := []string{"a 0", "last", "next"}; !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
}

// A file whose last line ends in a lone '\r' renamed out of the glob, no
// new file at its path: read where it went, it is left once quiet for
// rotateWaitMillis (DESIGN §10: a file renamed out of the glob is read to
// its end) — the line is delivered (a control: its source's own rule for
// a path that names another file or none takes it; the glob's close of a
// quiet file out of the glob waits for that take).
func TestGlobLoneCRLastLineOfAFileRenamedOutDelivered(t *testing.T) {
	t.Parallel()
	r, _, app := loneCRRig(t)
	defer r.stop()
	r.waitLines(1, 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	if err := os.Rename(app, app+".1"); err != nil {
		t.Fatal(err)
	}
	r.waitLines(2, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	r.mu.Lock()
	got := slices.Clone(r.lines[app])
	r.mu.Unlock()
	if want := []string{"a 0", "last"}; !slices.Equal(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
}

// Review 41 F2: a file whose last line ends in a lone '\r' is rotated out
// of the glob and a new file takes its path: the old file is left, its
// '\r' ends the line and the line is delivered; then its writer appends
// the '\n' (a "\r\n" split across the rotation), which completes that
// terminator (no empty line). Its pointer must cover that '\n': left one
// byte short (after the '\r'), the file was never read to its end, so
// when it was deleted its pointer was not marked read to its end, and the
// next start counted it gone with an unread tail (lostTails 1) though
// every byte of it was delivered.
func TestGlobLoneCRCompletedAfterTheLineWasTakenIsCommitted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, to, next string
		rmRunning      string // removed while running ("" none)
		rmDown         string // removed while stopped ("" none)
		mvDown         string // app.log renamed to it while stopped ("" none)
	}{
		// Within the glob, deleted while running (both failed before:
		// lostTails 1 at the restart).
		{"in-deleted-running", "app-1.log", "b 0\n", "app-1.log", "", ""},
		{"in-empty-next-deleted-running", "app-1.log", "", "app-1.log", "", ""},
		// Out of the glob, an empty new file at its path: its pointer is
		// kept as the path's record, marked read to its end (markHeld).
		// The old file still beside the path while no file is at the
		// path: found there with its '\n' past the mark's end (failed
		// before: counted lost).
		{"out-empty-next-moved-down", "app.log.1", "", "", "", "app.log.0"},
		// Controls (passed before): out of the glob the key is retired.
		{"out-deleted-running", "app.log.1", "b 0\n", "app.log.1", "", ""},
		{"out-deleted-down", "app.log.1", "b 0\n", "", "app.log.1", ""},
		{"out-empty-next-deleted-down", "app.log.1", "", "", "app.log.1", ""},
		{"out-empty-next-deleted-running", "app.log.1", "", "app.log.1", "", ""},
		// (Within the glob and deleted while stopped, a file read to its
		// end counts lostTails 1 at the next start, whatever its last
		// line: nothing tells that it had no tail — README.)
	} {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, data := t.TempDir(), t.TempDir()
			app := filepath.Join(dir, "app.log")
			if err := os.WriteFile(app, []byte("a 0\nlast\r"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
			r.waitLines(1, 10*time.Second)
			time.Sleep(200 * time.Millisecond)                     // caught up, "last\r" held
			w, err := os.OpenFile(app, os.O_WRONLY|os.O_APPEND, 0) // the writer's descriptor
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(app, filepath.Join(dir, tc.to)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(app, []byte(tc.next), 0o644); err != nil {
				t.Fatal(err)
			}
			want := 2
			if tc.next != "" {
				want = 3
			}
			r.waitLines(want, 10*time.Second)
			w.WriteString("\n") // within rotateWaitMillis: read by the old file's source
			w.Close()
			r.waitCommitted(uint64(want), 10*time.Second)
			time.Sleep(time.Second) // quiet for rotateWaitMillis: left and closed
			if tc.rmRunning != "" {
				if err := os.Remove(filepath.Join(dir, tc.rmRunning)); err != nil {
					t.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond)
			}
			r.stop()
			if tc.rmDown != "" {
				if err := os.Remove(filepath.Join(dir, tc.rmDown)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.mvDown != "" {
				if err := os.Rename(app, filepath.Join(dir, tc.mvDown)); err != nil {
					t.Fatal(err)
				}
			}
			r.mu.Lock()
			got := slices.Clone(r.order)
			r.mu.Unlock()
			if len(got) != want {
				t.Fatalf("lines %q, want %d (no empty line for the '\\n')", got, want)
			}

			r2 := newGlobRig(t, dir, data, filepath.Join(dir, "*.log"), 16)
			time.Sleep(time.Second)
			r2.stop()
			if n := r2.count(); n != 0 {
				t.Fatalf("the restart delivered %d lines again", n)
			}
			if n := r2.g.LostTails(); n != 0 {
				t.Fatalf("the restart counted lostTails %d for a file read to its end and delivered whole (its pointer short of the '\\n' that completed its last \"\\r\\n\")", n)
			}
		})
	}
}
