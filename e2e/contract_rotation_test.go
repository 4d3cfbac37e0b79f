package e2e

// DESIGN §4: rotation, truncation, replacement, and the restart after a
// rotation.

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

const ctRotationConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
shutdownTimeoutMillis: 1000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 50
    rotateWaitMillis: 1000
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
  - name: hook
    feed: app
    type: webhook
    url: %s/ingest
`

// TestContractRotation walks one feed through §4's cases with a file sink:
// WAITING_FOR_FILE until the file appears; a rename rotation (the old file
// read to its end first, then the new one from 0 under a new epoch, the
// pointer reset to the new file's key); bytes appended to the old file
// after the switch delivered and counted in `downgraded`; a truncation in
// place (a new epoch, the partial line before it never glued to the new
// bytes); delete and recreate; a same-content copy renamed over the path
// (same epoch, nothing twice); a rotation while stopped (the rotated file's
// unread tail first); and a rotated file gone while stopped (`lostTails`,
// the exact `detail`, lossless false). The steps build on each other, so
// they are steps of one test, not subtests: a failed step ends the test.
func TestContractRotation(t *testing.T) {
	h := newHook(t)
	e := newEnv(t, fmt.Sprintf(ctRotationConfig, h.srv.URL))
	defer func() {
		// The webhook got every line once, and no request spans two epochs.
		h.mu.Lock()
		defer h.mu.Unlock()
		var lines []string
		for _, req := range h.reqs {
			epochs := map[string]bool{}
			for _, o := range req.objects {
				var ep, line string
				json.Unmarshal(o["epoch"], &ep)
				json.Unmarshal(o["line"], &line)
				epochs[ep] = true
				lines = append(lines, line+"\n")
			}
			if len(epochs) != 1 {
				t.Errorf("a webhook request spans the epochs %v: %s", epochs, req.body)
			}
		}
		if got, want := strings.Join(lines, ""), "a1\na2\na3\na4\nb1\na5\nc1\nc2\nd1\nd2\ng1\ng2\ng3\nd3\ne1\nf1\n"; got != want {
			t.Errorf("webhook lines %q, want %q", got, want)
		}
	}()
	in, out := e.path("in.log"), e.path("out.log")
	ptr := e.path("state/feeds/app.ptr")
	var want string // the output so far
	var d *daemon
	var s *sampler
	// expect waits for the output to be want and the feed settled with the
	// pointer at the end of the file at the path.
	expect := func(t *testing.T, more string) feedReport {
		t.Helper()
		want += more
		waitUntil(t, fmt.Sprintf("output %q", want), 20*time.Second, func() bool {
			b, _ := os.ReadFile(out)
			return len(b) >= len(want)
		})
		if b, _ := os.ReadFile(out); string(b) != want {
			t.Fatalf("output %q, want %q", b, want)
		}
		st, err := os.Stat(in)
		if err != nil {
			t.Fatal(err)
		}
		r := waitReport(t, d, "settled at the end of the file", 30*time.Second, func(r *report) bool {
			f := r.Feeds[0]
			return r.Settled && f.Pointer != nil && f.Pointer.Offset == st.Size() && f.Pointer.Epoch == f.Epoch
		})
		return r.Feeds[0]
	}
	// pointerAt checks the pointer file: the epoch, the file key of the
	// file at the path, and no valid slot of another epoch.
	pointerAt := func(t *testing.T, epoch string) {
		t.Helper()
		_, a, b := readSlots(t, ptr)
		n, _, _ := newestSlot(t, a, b)
		if got := fmt.Sprintf("%016x", n.epoch); got != epoch || n.key != fileKeyOf(t, in) {
			t.Errorf("pointer epoch %s key %016x, want %s and the file key %016x of the file at the path", got, n.key, epoch, fileKeyOf(t, in))
		}
		for i, sl := range []ptrSlot{a, b} {
			if sl.why == "" && sl.epoch != n.epoch {
				t.Errorf("slot %c holds the older epoch %016x", 'A'+i, sl.epoch)
			}
		}
	}

	d = e.start()
	s = sample(t, d)
	var epoch string
	step(t, "waiting for the file", func() {
		r := waitReport(t, d, "WAITING_FOR_FILE", 30*time.Second, func(r *report) bool { return r.Feeds[0].State == "WAITING_FOR_FILE" })
		if f := r.Feeds[0]; !f.Settled || f.Sequence != 0 {
			t.Errorf("no file: settled %v sequence %d, want settled (WAITING_FOR_FILE) and 0", f.Settled, f.Sequence)
		}
		appendTo(t, in, "a1\na2\n")
		f := expect(t, "a1\na2\n")
		epoch = f.Epoch
		pointerAt(t, epoch)
		if show := showPointerText(t, ptr); show["offset"] != "6" {
			t.Errorf("pointer show while the daemon runs (it takes no lock): %v", show)
		}
	})
	step(t, "rename rotation", func() {
		appendTo(t, in, "a3\n")
		if err := os.Rename(in, in+".1"); err != nil {
			t.Fatal(err)
		}
		appendTo(t, in+".1", "a4\n") // written to the old file after the rename
		appendTo(t, in, "b1\n")
		f := expect(t, "a3\na4\nb1\n")
		if f.Epoch == epoch {
			t.Errorf("epoch %s kept across a rotation; every new file gets a new epoch", f.Epoch)
		}
		epoch = f.Epoch
		pointerAt(t, epoch)
	})
	step(t, "appended to the old file after the switch: downgraded", func() {
		appendTo(t, in+".1", "a5\n")
		waitUntil(t, "a5 delivered", 20*time.Second, func() bool {
			b, _ := os.ReadFile(out)
			return string(b) == want+"a5\n"
		})
		want += "a5\n"
		r := waitReport(t, d, "downgraded 1", 30*time.Second, func(r *report) bool { return r.Feeds[0].Downgraded == 1 && r.Settled })
		if f := r.Feeds[0]; f.Epoch != epoch || f.Pointer.Offset != 3 || !f.Lossless {
			t.Errorf("after a downgraded line: epoch %s pointer %+v lossless %v; want %s, offset 3 (the new file), lossless", f.Epoch, f.Pointer, f.Lossless, epoch)
		}
	})
	step(t, "truncation in place", func() {
		appendTo(t, in, "b2") // a partial line, never delivered
		waitReport(t, d, "unterminated 2", 30*time.Second, func(r *report) bool { return r.Feeds[0].Unterminated == 2 })
		if err := os.Truncate(in, 0); err != nil {
			t.Fatal(err)
		}
		appendTo(t, in, "c1\n")
		f := expect(t, "c1\n")
		if f.Epoch == epoch {
			t.Errorf("epoch %s kept across a truncation", f.Epoch)
		}
		epoch = f.Epoch
		pointerAt(t, epoch)
	})
	step(t, "delete: read to its end, WAITING_FOR_FILE, recreate", func() {
		w, err := os.OpenFile(in, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(in); err != nil {
			t.Fatal(err)
		}
		w.WriteString("c2\n") // a writer still appending to the deleted file
		w.Close()
		want += "c2\n"
		waitUntil(t, "c2 from the deleted file", 20*time.Second, func() bool {
			b, _ := os.ReadFile(out)
			return string(b) == want
		})
		r := waitReport(t, d, "WAITING_FOR_FILE after rotateWaitMillis", 30*time.Second, func(r *report) bool {
			return r.Feeds[0].State == "WAITING_FOR_FILE" && r.Settled
		})
		// Closed with every line acknowledged, the deleted file is
		// forgotten: an empty record under a new epoch (DESIGN §4), so that
		// a restart that cannot find it loses nothing.
		if f := r.Feeds[0]; f.Pointer == nil || f.Pointer.Offset != 0 || f.Pointer.Epoch == epoch {
			t.Errorf("pointer %+v after the deleted file was read to its end, want offset 0 under an epoch other than %s", f.Pointer, epoch)
		}
		appendTo(t, in, "d1\n")
		f := expect(t, "d1\n")
		if f.Epoch == epoch {
			t.Errorf("epoch %s kept across a delete and recreate", f.Epoch)
		}
		epoch = f.Epoch
		pointerAt(t, epoch)
	})
	step(t, "same content under a new file key while tailing", func() {
		data, _ := os.ReadFile(in)
		tmp := in + ".tmp"
		os.WriteFile(tmp, append(data, "d2\n"...), 0o644)
		if err := os.Rename(tmp, in); err != nil {
			t.Fatal(err)
		}
		f := expect(t, "d2\n")
		if f.Epoch != epoch {
			t.Errorf("epoch %s after a same-content copy, want %s kept", f.Epoch, epoch)
		}
		pointerAt(t, epoch)
	})
	step(t, "rewritten in place past the old size: caught by the fingerprint", func() {
		if err := os.WriteFile(in, []byte("g1\ng2\ng3\n"), 0o644); err != nil { // O_TRUNC, then 9 > 6 bytes
			t.Fatal(err)
		}
		f := expect(t, "g1\ng2\ng3\n")
		if f.Epoch == epoch {
			t.Errorf("epoch %s kept although other bytes were written over the file", f.Epoch)
		}
		epoch = f.Epoch
		pointerAt(t, epoch)
	})
	s.finish()
	d.stop()
	// age makes the generations read to their end above look as old as they
	// would be in a real deployment: a restart reads every generation
	// modified within 2 s of its reference (DESIGN §4), a duplicate that this
	// test, fast as it is, would otherwise see.
	age := func(names ...string) {
		old := time.Now().Add(-time.Minute)
		for _, n := range names {
			if err := os.Chtimes(n, old, old); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}

	step(t, "rotation while stopped: the rotated file's tail first", func() {
		age(in + ".1")
		appendTo(t, in, "d3\n") // unread: the daemon is stopped
		if err := os.Rename(in, in+".2"); err != nil {
			t.Fatal(err)
		}
		appendTo(t, in, "e1\n")
		d = e.start()
		s = sample(t, d)
		f := expect(t, "d3\ne1\n")
		s.finish()
		d.stop()
		if f.Epoch == epoch || f.LostTails != 0 || !f.Lossless || f.Sequence != 2 {
			t.Errorf("epoch %s (was %s) lostTails %d lossless %v sequence %d; want a new epoch, 0, true, 2", f.Epoch, epoch, f.LostTails, f.Lossless, f.Sequence)
		}
		epoch = f.Epoch
		pointerAt(t, epoch)
	})

	step(t, "rotated file gone while stopped: lostTails", func() {
		age(in+".1", in+".2")
		appendTo(t, in, "e2\n") // the unread tail that will be lost
		// The new file gets its inode while the old one still exists, so it
		// cannot reuse it (that would look like a truncation).
		os.WriteFile(in+".new", []byte("f1\n"), 0o644)
		if err := os.Remove(in); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(in+".new", in); err != nil {
			t.Fatal(err)
		}
		d = e.start()
		s = sample(t, d)
		f := expect(t, "f1\n")
		s.finish()
		const detail = "rotated file gone; its unread tail is lost"
		if f.LostTails != 1 || f.Lossless || f.Detail == nil || *f.Detail != detail || !strings.Contains(d.log(), "WARN") {
			t.Errorf("lostTails %d lossless %v detail %v WARN %v; want 1, false, %q, a WARN", f.LostTails, f.Lossless, f.Detail, strings.Contains(d.log(), "WARN"), detail)
		}
		d.stop()
	})
}
