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
// back to the other one.
func TestContractPointerFile(t *testing.T) {
	e := newEnv(t, committedConfig)
	in := newInput(t, e.path("in.log"))
	ptr := e.path("state/feeds/app.ptr")
	in.appendLines(20) // < 4 KiB

	// run settles a daemon with the pointer at the input's end, checks its
	// reports while it runs, stops it and returns the last report.
	run := func(t *testing.T, wantSeq int) feedReport {
		t.Helper()
		d := e.start()
		s := sample(t, d)
		r := waitReport(t, d, "settled at the input's end", 30*time.Second, func(r *report) bool {
			f := r.Feeds[0]
			return r.Settled && f.Pointer != nil && f.Pointer.Offset == in.size()
		})
		s.finish()
		d.stop()
		f := r.Feeds[0]
		if wantSeq >= 0 && f.Sequence != uint64(wantSeq) {
			t.Errorf("sequence %d this run, want %d", f.Sequence, wantSeq)
		}
		if f.Pointer.Epoch != f.Epoch {
			t.Errorf("pointer epoch %s, feed epoch %s", f.Pointer.Epoch, f.Epoch)
		}
		return f
	}
	warned := func(t *testing.T) bool {
		t.Helper()
		return strings.Contains(e.runs[len(e.runs)-1].log(), "WARN")
	}
	// A reset rewrites the pointer file in place, never by rename: its
	// inode stays.
	var ptrIno uint64
	sameInode := func(t *testing.T) {
		t.Helper()
		st, err := os.Stat(ptr)
		if err != nil {
			t.Fatal(err)
		}
		ino := st.Sys().(*syscall.Stat_t).Ino
		if ptrIno == 0 {
			ptrIno = ino
		} else if ino != ptrIno {
			t.Errorf("pointer file inode %d, was %d: a reset rewrites the file in place, never by rename", ino, ptrIno)
		}
	}

	var epoch string
	t.Run("small file: fingerprint covers the whole file", func(t *testing.T) {
		f := run(t, 20)
		epoch = f.Epoch
		sameInode(t)
		_, a, b := readSlots(t, ptr)
		n, _, _ := newestSlot(t, a, b)
		if n.fpLen != uint64(in.size()) || n.fp != fingerprintOf(t, in.path, n.fpLen) {
			t.Errorf("fingerprint length %d value %016x, want %d and FNV-1a %016x", n.fpLen, n.fp, in.size(), fingerprintOf(t, in.path, uint64(in.size())))
		}
		if fmt.Sprintf("%016x", n.epoch) != epoch || n.epoch == 0 {
			t.Errorf("slot epoch %016x, feed.status %s", n.epoch, epoch)
		}
	})

	in.appendLines(300) // well past 4 KiB
	old := time.Now().Add(-time.Hour)
	os.Chtimes(in.path, old, old)
	var last feedReport
	t.Run("append and touch keep the epoch", func(t *testing.T) {
		last = run(t, 300)
		if last.Epoch != epoch {
			t.Errorf("epoch %s after an append and a touch, want %s (never a reset)", last.Epoch, epoch)
		}
	})

	t.Run("slot layout", func(t *testing.T) {
		data, a, b := readSlots(t, ptr)
		n, letter, other := newestSlot(t, a, b)
		if n.offset != in.size() {
			t.Errorf("slot %s offset %d, want %d", letter, n.offset, in.size())
		}
		if n.epoch == 0 || fmt.Sprintf("%016x", n.epoch) != epoch {
			t.Errorf("slot %s epoch %016x, want %s (never 0)", letter, n.epoch, epoch)
		}
		if want := fileKeyOf(t, in.path); n.key != want {
			t.Errorf("slot %s file key %016x, want FNV-1a(dev, ino) %016x", letter, n.key, want)
		}
		if n.fpLen != 4096 {
			t.Errorf("fingerprint length %d, want 4096 once a commit happened on a file ≥ 4 KiB", n.fpLen)
		} else if want := fingerprintOf(t, in.path, 4096); n.fp != want {
			t.Errorf("fingerprint %016x, want FNV-1a of the first 4096 bytes %016x", n.fp, want)
		}
		if n.count == 0 || n.count != last.Pointer.Commits {
			t.Errorf("commit counter %d, feed.status pointer.commits %d", n.count, last.Pointer.Commits)
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
		_, a, b := readSlots(t, ptr)
		n, letter, _ := newestSlot(t, a, b)
		want := map[string]string{
			"offset": strconv.FormatInt(n.offset, 10), "epoch": fmt.Sprintf("%016x", n.epoch),
			"fileKey": fmt.Sprintf("%016x", n.key), "fingerprintLength": strconv.FormatUint(n.fpLen, 10),
			"fingerprint": fmt.Sprintf("%016x", n.fp), "commits": strconv.FormatUint(n.count, 10),
			"slot": letter, "layout": "1",
		}
		got := showPointerText(t, ptr)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("pointer show %s: %q, the bytes say %q", k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("pointer show printed %v, want the keys %v", got, want)
		}
		rec, _ := showPointer(t, ptr)
		if j := (pointerRecord{n.offset, want["epoch"], want["fileKey"], int64(n.fpLen), want["fingerprint"], n.count, letter, 1}); rec != j {
			t.Errorf("pointer show --json %+v, the bytes say %+v", rec, j)
		}
	})

	t.Run("each commit writes the other slot, counter + 1", func(t *testing.T) {
		d := e.start()
		defer d.stop()
		var lastLetter string
		var lastCount uint64
		for round := range 4 {
			in.appendLines(1) // one line: one commit
			r := waitReport(t, d, "settled at the end", 30*time.Second, func(r *report) bool {
				return r.Settled && r.Feeds[0].Pointer.Offset == in.size()
			})
			_, a, b := readSlots(t, ptr)
			n, letter, other := newestSlot(t, a, b)
			if n.offset != in.size() || n.count != r.Feeds[0].Pointer.Commits {
				t.Errorf("round %d: slot %s offset %d counter %d; want %d and pointer.commits %d", round, letter, n.offset, n.count, in.size(), r.Feeds[0].Pointer.Commits)
			}
			if round > 0 && (letter == lastLetter || n.count != lastCount+1 || other.count != lastCount) {
				t.Errorf("round %d: newest slot %s counter %d (other %d), previous %s %d: a commit writes the slot not holding the newest record, counter + 1",
					round, letter, n.count, other.count, lastLetter, lastCount)
			}
			lastLetter, lastCount = letter, n.count
		}
	})

	t.Run("same content under a new file key keeps the pointer", func(t *testing.T) {
		data, err := os.ReadFile(in.path)
		if err != nil {
			t.Fatal(err)
		}
		tmp := e.path("in.log.new")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, in.path); err != nil {
			t.Fatal(err)
		}
		in.appendLines(10)
		f := run(t, 10)
		if f.Epoch != epoch {
			t.Errorf("epoch %s after a copy of the same bytes, want %s kept", f.Epoch, epoch)
		}
		if !warned(t) {
			t.Errorf("no WARN for the new file key")
		}
		_, a, b := readSlots(t, ptr)
		if n, _, _ := newestSlot(t, a, b); n.key != fileKeyOf(t, in.path) {
			t.Errorf("file key %016x after the commit, want the new file's %016x", n.key, fileKeyOf(t, in.path))
		}
	})

	t.Run("corrupt newest slot: the other one is used", func(t *testing.T) {
		data, a, b := readSlots(t, ptr)
		_, letter, other := newestSlot(t, a, b)
		if other.why != "" {
			t.Fatalf("the other slot is not valid (%s); nothing to fall back to", other.why)
		}
		at := 8 // the newest slot's offset field
		if letter == "B" {
			at += 512
		}
		data[at] ^= 0x55
		if err := os.WriteFile(ptr, data, 0o644); err != nil {
			t.Fatal(err)
		}
		show := showPointerText(t, ptr)
		wantSlot := map[string]string{"A": "B", "B": "A"}[letter]
		if show["slot"] != wantSlot || show["offset"] != strconv.FormatInt(other.offset, 10) {
			t.Errorf("pointer show after corrupting slot %s: slot %s offset %s, want %s %d", letter, show["slot"], show["offset"], wantSlot, other.offset)
		}
		f := run(t, len(in.texts)-in.firstAfter(other.offset))
		if f.Epoch != epoch {
			t.Errorf("epoch %s after falling back to the other slot, want %s (the same epoch)", f.Epoch, epoch)
		}
	})

	t.Run("replaced at open: new epoch from 0", func(t *testing.T) {
		f, err := os.OpenFile(in.path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("L"), 0) // "line-…" → "Line-…": other first bytes
		f.Close()
		got := run(t, len(in.texts))
		if got.Epoch == epoch || !warned(t) {
			t.Errorf("epoch %s (was %s), WARN %v: a replaced file resets under a new epoch with a WARN", got.Epoch, epoch, warned(t))
		}
		epoch = got.Epoch
		sameInode(t)
	})

	t.Run("truncated at open: new epoch from 0", func(t *testing.T) {
		k := len(in.texts) - 50 // still > 4 KiB: the fingerprint matches, the size does not
		if err := os.Truncate(in.path, in.ends[k-1]); err != nil {
			t.Fatal(err)
		}
		in.texts, in.ends = in.texts[:k], in.ends[:k]
		got := run(t, k)
		if got.Epoch == epoch || !warned(t) {
			t.Errorf("epoch %s (was %s), WARN %v: a truncated file resets under a new epoch with a WARN", got.Epoch, epoch, warned(t))
		}
		epoch = got.Epoch
		sameInode(t)
	})

	t.Run("short pointer file: WARN and a fresh start at 0", func(t *testing.T) {
		if err := os.Truncate(ptr, 100); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := cli(t, "pointer", "show", ptr); code != 1 || errOut == "" {
			t.Errorf("pointer show on a 100-byte file: exit %d stderr %q, want 1 with the reason", code, errOut)
		}
		got := run(t, len(in.texts))
		if got.Epoch == epoch || !warned(t) {
			t.Errorf("epoch %s (was %s), WARN %v", got.Epoch, epoch, warned(t))
		}
		epoch = got.Epoch
		// A reset leaves no valid slot of an older epoch.
		_, a, b := readSlots(t, ptr)
		for i, s := range []ptrSlot{a, b} {
			if s.why == "" && fmt.Sprintf("%016x", s.epoch) != epoch {
				t.Errorf("slot %c holds epoch %016x after the reset to %s", 'A'+i, s.epoch, epoch)
			}
		}
	})

	t.Run("no valid slot: exit 1 from pointer show, WARN and a fresh start", func(t *testing.T) {
		if err := os.WriteFile(ptr, make([]byte, 1024), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := cli(t, "pointer", "show", ptr)
		if code != 1 || errOut == "" || out != "" {
			t.Errorf("pointer show on a zeroed file: exit %d stdout %q stderr %q, want 1 with the reason", code, out, errOut)
		}
		got := run(t, len(in.texts))
		if got.Epoch == epoch || !warned(t) {
			t.Errorf("epoch %s (was %s), WARN %v", got.Epoch, epoch, warned(t))
		}
	})
}
