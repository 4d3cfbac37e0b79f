package e2e

// DESIGN §3: the pointer file.

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestContractPointerFile holds the pointer file of §3 to its bytes: the
// layout of both slots computed independently (FNV-1a file key and
// fingerprint, CRC-32C), `pointer show` agreeing with the bytes, the
// fingerprint growing to 4096, the epoch kept across appends, touches and
// a same-content copy, and reset under a new epoch on replacement,
// truncation, a corrupt or short pointer file; a corrupt newest slot falls
// back to the other one. Each subtest sets up its own directory and runs
// alone (-run 'TestContractPointerFile/slot_layout').
func TestContractPointerFile(t *testing.T) {
	t.Run("small file: fingerprint covers the whole file", func(t *testing.T) {
		rig := newPointerRig(t)
		_, a, b := readSlots(t, rig.ptr)
		n, _, _ := newestSlot(t, a, b)
		if n.fpLen != uint64(rig.in.size()) || n.fp != fingerprintOf(t, rig.in.path, n.fpLen) {
			t.Errorf("fingerprint length %d value %016x, want %d and FNV-1a %016x", n.fpLen, n.fp, rig.in.size(), fingerprintOf(t, rig.in.path, uint64(rig.in.size())))
		}
		if fmt.Sprintf("%016x", n.epoch) != rig.epoch || n.epoch == 0 {
			t.Errorf("slot epoch %016x, feed.status %s", n.epoch, rig.epoch)
		}
	})
	t.Run("append and touch keep the epoch", func(t *testing.T) {
		rig := newPointerRig(t)
		rig.grow(t)
		if rig.last.Epoch != rig.epoch {
			t.Errorf("epoch %s after an append and a touch, want %s (never a reset)", rig.last.Epoch, rig.epoch)
		}
	})
	t.Run("slot layout", func(t *testing.T) {
		rig := newPointerRig(t)
		rig.grow(t)
		data, a, b := readSlots(t, rig.ptr)
		n, letter, other := newestSlot(t, a, b)
		if n.offset != rig.in.size() {
			t.Errorf("slot %s offset %d, want %d", letter, n.offset, rig.in.size())
		}
		if n.epoch == 0 || fmt.Sprintf("%016x", n.epoch) != rig.epoch {
			t.Errorf("slot %s epoch %016x, want %s (never 0)", letter, n.epoch, rig.epoch)
		}
		if want := fileKeyOf(t, rig.in.path); n.key != want {
			t.Errorf("slot %s file key %016x, want FNV-1a(dev, ino) %016x", letter, n.key, want)
		}
		if n.fpLen != 4096 {
			t.Errorf("fingerprint length %d, want 4096 once a commit happened on a file ≥ 4 KiB", n.fpLen)
		} else if want := fingerprintOf(t, rig.in.path, 4096); n.fp != want {
			t.Errorf("fingerprint %016x, want FNV-1a of the first 4096 bytes %016x", n.fp, want)
		}
		if n.count == 0 || n.count != rig.last.Pointer.Commits {
			t.Errorf("commit counter %d, feed.status pointer.commits %d", n.count, rig.last.Pointer.Commits)
		}
		// The other slot: a valid older record of the same epoch (a reset
		// writes both; no older epoch is ever left), or never written.
		if other.why == "" {
			if other.count >= n.count || other.epoch != n.epoch || other.offset > n.offset {
				t.Errorf("other slot: counter %d epoch %016x offset %d; newest %d %016x %d", other.count, other.epoch, other.offset, n.count, n.epoch, n.offset)
			}
		} else if otherHalf := data[512:]; letter == "B" {
			otherHalf = data[:512]
			if !bytes.Equal(otherHalf, make([]byte, 512)) {
				t.Errorf("other slot invalid (%s) but not empty", other.why)
			}
		}
	})
	t.Run("pointer show matches the bytes", func(t *testing.T) {
		rig := newPointerRig(t)
		rig.grow(t)
		_, a, b := readSlots(t, rig.ptr)
		n, letter, _ := newestSlot(t, a, b)
		want := map[string]string{
			"offset": strconv.FormatInt(n.offset, 10), "epoch": fmt.Sprintf("%016x", n.epoch),
			"fileKey": fmt.Sprintf("%016x", n.key), "fingerprintLength": strconv.FormatUint(n.fpLen, 10),
			"fingerprint": fmt.Sprintf("%016x", n.fp), "commits": strconv.FormatUint(n.count, 10),
			"slot": letter, "layout": "1",
		}
		got := showPointerText(t, rig.ptr)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("pointer show %s: %q, the bytes say %q", k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("pointer show printed %v, want the keys %v", got, want)
		}
		rec, _ := showPointer(t, rig.ptr)
		if j := (pointerRecord{n.offset, want["epoch"], want["fileKey"], int64(n.fpLen), want["fingerprint"], n.count, letter, 1}); rec != j {
			t.Errorf("pointer show --json %+v, the bytes say %+v", rec, j)
		}
	})
	t.Run("each commit writes the other slot, counter + 1", func(t *testing.T) {
		rig := newPointerRig(t)
		rig.grow(t)
		d := rig.e.start()
		defer d.stop()
		var lastLetter string
		var lastCount uint64
		for round := range 4 {
			rig.in.appendLines(1) // one line: one commit
			r := waitReport(t, d, "settled at the end", 30*time.Second, func(r *report) bool {
				return r.Settled && r.Feeds[0].Pointer.Offset == rig.in.size()
			})
			_, a, b := readSlots(t, rig.ptr)
			n, letter, other := newestSlot(t, a, b)
			if n.offset != rig.in.size() || n.count != r.Feeds[0].Pointer.Commits {
				t.Errorf("round %d: slot %s offset %d counter %d; want %d and pointer.commits %d", round, letter, n.offset, n.count, rig.in.size(), r.Feeds[0].Pointer.Commits)
			}
			if round > 0 && (letter == lastLetter || n.count != lastCount+1 || other.count != lastCount) {
				t.Errorf("round %d: newest slot %s counter %d (other %d), previous %s %d: a commit writes the slot not holding the newest record, counter + 1",
					round, letter, n.count, other.count, lastLetter, lastCount)
			}
			lastLetter, lastCount = letter, n.count
		}
	})
	t.Run("same content under a new file key keeps the pointer", func(t *testing.T) {
		rig := newPointerRig(t)
		rig.grow(t)
		data, err := os.ReadFile(rig.in.path)
		if err != nil {
			t.Fatal(err)
		}
		tmp := rig.e.path("in.log.new")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, rig.in.path); err != nil {
			t.Fatal(err)
		}
		rig.in.appendLines(10)
		f := rig.run(t, 10)
		if f.Epoch != rig.epoch {
			t.Errorf("epoch %s after a copy of the same bytes, want %s kept", f.Epoch, rig.epoch)
		}
		if !rig.warned() {
			t.Errorf("no WARN for the new file key")
		}
		_, a, b := readSlots(t, rig.ptr)
		if n, _, _ := newestSlot(t, a, b); n.key != fileKeyOf(t, rig.in.path) {
			t.Errorf("file key %016x after the commit, want the new file's %016x", n.key, fileKeyOf(t, rig.in.path))
		}
	})
	t.Run("corrupt newest slot: the other one is used", func(t *testing.T) {
		rig := newPointerRig(t)
		rig.grow(t)
		data, a, b := readSlots(t, rig.ptr)
		_, letter, other := newestSlot(t, a, b)
		if other.why != "" {
			t.Fatalf("the other slot is not valid (%s); nothing to fall back to", other.why)
		}
		at := 8 // the newest slot's offset field
		if letter == "B" {
			at += 512
		}
		data[at] ^= 0x55
		if err := os.WriteFile(rig.ptr, data, 0o644); err != nil {
			t.Fatal(err)
		}
		show := showPointerText(t, rig.ptr)
		wantSlot := map[string]string{"A": "B", "B": "A"}[letter]
		if show["slot"] != wantSlot || show["offset"] != strconv.FormatInt(other.offset, 10) {
			t.Errorf("pointer show after corrupting slot %s: slot %s offset %s, want %s %d", letter, show["slot"], show["offset"], wantSlot, other.offset)
		}
		f := rig.run(t, len(rig.in.texts)-rig.in.firstAfter(other.offset))
		if f.Epoch != rig.epoch {
			t.Errorf("epoch %s after falling back to the other slot, want %s (the same epoch)", f.Epoch, rig.epoch)
		}
	})
	t.Run("replaced at open: new epoch from 0", func(t *testing.T) {
		rig := newPointerRig(t)
		rig.grow(t)
		f, err := os.OpenFile(rig.in.path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("L"), 0) // "line-…" → "Line-…": other first bytes
		f.Close()
		got := rig.run(t, len(rig.in.texts))
		if got.Epoch == rig.epoch || !rig.warned() {
			t.Errorf("epoch %s (was %s), WARN %v: a replaced file resets under a new epoch with a WARN", got.Epoch, rig.epoch, rig.warned())
		}
		rig.sameInode(t)
	})
	t.Run("truncated at open: new epoch from 0", func(t *testing.T) {
		rig := newPointerRig(t)
		rig.grow(t)
		k := len(rig.in.texts) - 50 // still > 4 KiB: the fingerprint matches, the size does not
		if rig.in.ends[k-1] <= 4096 {
			t.Fatalf("%d bytes after the truncation; the case needs more than 4 KiB", rig.in.ends[k-1])
		}
		if err := os.Truncate(rig.in.path, rig.in.ends[k-1]); err != nil {
			t.Fatal(err)
		}
		rig.in.texts, rig.in.ends = rig.in.texts[:k], rig.in.ends[:k]
		got := rig.run(t, k)
		if got.Epoch == rig.epoch || !rig.warned() {
			t.Errorf("epoch %s (was %s), WARN %v: a truncated file resets under a new epoch with a WARN", got.Epoch, rig.epoch, rig.warned())
		}
		rig.sameInode(t)
	})
	t.Run("short pointer file: WARN and a fresh start at 0", func(t *testing.T) {
		rig := newPointerRig(t)
		if err := os.Truncate(rig.ptr, 100); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := cli(t, "pointer", "show", rig.ptr); code != 1 || errOut == "" {
			t.Errorf("pointer show on a 100-byte file: exit %d stderr %q, want 1 with the reason", code, errOut)
		}
		got := rig.run(t, len(rig.in.texts))
		if got.Epoch == rig.epoch || !rig.warned() {
			t.Errorf("epoch %s (was %s), WARN %v", got.Epoch, rig.epoch, rig.warned())
		}
		// A reset leaves no valid slot of an older epoch.
		_, a, b := readSlots(t, rig.ptr)
		for i, s := range []ptrSlot{a, b} {
			if s.why == "" && fmt.Sprintf("%016x", s.epoch) != got.Epoch {
				t.Errorf("slot %c holds epoch %016x after the reset to %s", 'A'+i, s.epoch, got.Epoch)
			}
		}
	})
	t.Run("no valid slot: exit 1 from pointer show, WARN and a fresh start", func(t *testing.T) {
		rig := newPointerRig(t)
		if err := os.WriteFile(rig.ptr, make([]byte, 1024), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := cli(t, "pointer", "show", rig.ptr)
		if code != 1 || errOut == "" || out != "" {
			t.Errorf("pointer show on a zeroed file: exit %d stdout %q stderr %q, want 1 with the reason", code, out, errOut)
		}
		got := rig.run(t, len(rig.in.texts))
		if got.Epoch == rig.epoch || !rig.warned() {
			t.Errorf("epoch %s (was %s), WARN %v", got.Epoch, rig.epoch, rig.warned())
		}
	})
}

// pointerRig is one COMMITTED feed whose first run settled 20 lines (< 4 KiB)
// and stopped: the state every pointer-file case starts from.
type pointerRig struct {
	e     *env
	in    *input
	ptr   string
	epoch string     // the feed's epoch after the first run
	ino   uint64     // the pointer file's inode after the first run
	last  feedReport // the last run's feed
}

func newPointerRig(t *testing.T) *pointerRig {
	t.Helper()
	e := newEnv(t, committedConfig)
	r := &pointerRig{e: e, in: newInput(t, e.path("in.log")), ptr: e.path("state/feeds/app.ptr")}
	r.in.appendLines(20) // < 4 KiB
	r.epoch = r.run(t, 20).Epoch
	st, err := os.Stat(r.ptr)
	if err != nil {
		t.Fatal(err)
	}
	r.ino = st.Sys().(*syscall.Stat_t).Ino
	return r
}

// grow appends 300 lines (well past 4 KiB), sets the file's times an hour
// back (a touch) and settles one more run of them.
func (r *pointerRig) grow(t *testing.T) {
	t.Helper()
	r.in.appendLines(300)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(r.in.path, old, old)
	r.run(t, 300)
}

// run settles a daemon with the pointer at the input's end, checks its
// reports while it runs, stops it and returns the last report's feed.
func (r *pointerRig) run(t *testing.T, wantSeq int) feedReport {
	t.Helper()
	d := r.e.start()
	s := sample(t, d)
	rep := waitReport(t, d, "settled at the input's end", 30*time.Second, func(rep *report) bool {
		f := rep.Feeds[0]
		return rep.Settled && f.Pointer != nil && f.Pointer.Offset == r.in.size()
	})
	s.finish()
	d.stop()
	f := rep.Feeds[0]
	if wantSeq >= 0 && f.Sequence != uint64(wantSeq) {
		t.Errorf("sequence %d this run, want %d", f.Sequence, wantSeq)
	}
	if f.Pointer.Epoch != f.Epoch {
		t.Errorf("pointer epoch %s, feed epoch %s", f.Pointer.Epoch, f.Epoch)
	}
	r.last = f
	return f
}

// warned reports whether the last run logged a WARN.
func (r *pointerRig) warned() bool {
	return strings.Contains(r.e.runs[len(r.e.runs)-1].log(), "WARN")
}

// sameInode checks that the pointer file is still the one of the first
// run: a reset rewrites it in place, never by rename.
func (r *pointerRig) sameInode(t *testing.T) {
	t.Helper()
	st, err := os.Stat(r.ptr)
	if err != nil {
		t.Fatal(err)
	}
	if ino := st.Sys().(*syscall.Stat_t).Ino; ino != r.ino {
		t.Errorf("pointer file inode %d, was %d: a reset rewrites the file in place, never by rename", ino, r.ino)
	}
}
