package file_test

// Review 26e (independent review of a24eb4b: changed() counts a file cut
// short above the read position, first bytes kept; a once-read whose file
// ends before its size at open counts the rest). Each TestRev26ER<letter>…
// test here fails on the reviewed code for the reason its comment states.

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// A (a loss named by epoch 0). A rename rotation: app.log (3,000 lines,
// more than the queue holds, its 11th line held by the subscriber) is
// renamed to app.log.1 and a new app.log of 1,000 lines (8,000 bytes) is
// queued behind it; the queued file is checked (checkQueued → changed) at
// 8,000 bytes. Before a line of it is read it is cut to 6,000 bytes, its
// first 4 KiB (the fingerprint) kept: the new branch of changed() counts
// the 2,000 bytes seen past its new end — under nx.epoch, which a queued
// file does not have yet (0). DESIGN §4 "Nothing green over a loss" and
// §11 (losses are named by the epoch whose lines they are: catch-up and
// the loss ledger map an epoch back to its file); the existing rule for a
// queued file (rewrittenUnread: "it gets the one it will be read under, so
// that the loss names it (never epoch 0)"; TestQueuedFileRewritten…
// UnderItsEpoch). Expected: the lostTails/lostBytes records name the epoch
// the x lines are then delivered under. Observed: Epoch 0 (names nothing;
// the x lines get another epoch at the switch). Cause: source/file/rotate.go
// changed() ~249-258 calls s.lose(…, r.epoch, …) for a queued reader
// (checkQueued ~365) whose epoch is still 0.
func TestRev26ERAQueuedFileCutShortCountsItsLossUnderEpochZero(t *testing.T) {
	hold := make(chan struct{})
	losses := &lossLog{}
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true, onLoss: losses.add,
		hold: map[string]chan struct{}{"a-00010": hold}})
	appendTo(t, r.path, numbered("a", 0, 3000)...)
	r.start()
	r.waitLines(10)
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("x", 0, 1000)...) // 8,000 bytes
	r.waitFor("the new file queued", 5*time.Second, func() bool { return strings.Contains(r.logs.String(), "queued behind the open one") })
	time.Sleep(300 * time.Millisecond) // checked at its full size (polls every 50 ms)
	if err := os.Truncate(r.path, 6000); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the loss counted", 5*time.Second, func() bool { return len(losses.all()) > 0 })
	close(hold)
	r.waitLines(3750)
	r.waitSettled()
	var xEpoch uint64
	for _, g := range r.rec.all() {
		if strings.HasPrefix(g.Line, "x-") {
			xEpoch = g.Epoch
		}
	}
	for _, l := range losses.all() {
		if l.Epoch == 0 || l.Epoch != xEpoch {
			t.Errorf("loss %s %d counted under epoch %016x, want the x lines' epoch %016x (never 0)", l.Counter, l.Amount, l.Epoch, xEpoch)
		}
	}
	t.Logf("losses %+v lostTails %d lostBytes %d", losses.all(), r.src.LostTails(), r.src.LostBytes())
}

// C (a loss left uncounted: lossless green over lines never read). A
// single-file ONCE_EARLIEST feed restarted by a reload (Config.Resume, as
// ResumePoint makes it: Offset after the 100th line, Limit the file's size
// at its first open, 8,000 bytes, the first 4 KiB's fingerprint, its key).
// While the feed restarted the file was cut to 6,000 bytes, its first
// bytes kept. DESIGN §4 "ONCE_EARLIEST reads from 0 to the file's size at
// open" and "Nothing green over a loss"; the change's own rule (2): "a
// once-read whose file ends before r.limit (its size at open) counts one
// lost tail and limit − readPos bytes". Expected: lines 100–749 delivered,
// then lostTails 1 and lostBytes 2,000 (8,000 − 6,000: its size at open
// past the new end). Observed: lostTails 0, lostBytes 0 — the bytes are
// gone without a count. Cause: reader.go onceEnd ~182-185 moves the
// resumed limit (c.Limit, set at open.go ~279) down to the size now
// silently, so atEnd's new check (rotate.go ~25) never sees
// readPos < limit.
func TestRev26ERCOnceReadResumedAfterReloadOfACutFileCountsNothing(t *testing.T) {
	losses := &lossLog{}
	r := newRig(t, "", rigOpts{strategy: file.OnceEarliest, onLoss: losses.add})
	appendTo(t, r.path, numbered("a", 0, 1000)...) // 8,000 bytes
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	id := identity(t, r.path)
	r.opts.resume = &file.Resume{Epoch: 0x5eed, Offset: 800, HeadLen: 4096, Head: pointer.Fingerprint(data[:4096]),
		Size: 800, Limit: 8000, Key: pointer.FileKey(id[0], id[1]), From: 0, End: 8000}
	if err := os.Truncate(r.path, 6000); err != nil { // cut while the feed restarted
		t.Fatal(err)
	}
	r.start()
	// (Every published line received too: the state can say end of
	// stream before the recorder has the last batch — CI under load.)
	r.waitFor("end of stream", 10*time.Second, func() bool { return r.src.State() == file.EndOfStream && r.pub.Pending() == 0 })
	got := r.rec.all()
	if len(got) != 650 || got[0].Line != "a-00100" || got[0].Epoch != 0x5eed {
		t.Fatalf("delivered %d lines (first %+v), want a-00100..a-00749 under the resumed epoch", len(got), got[0])
	}
	if r.src.LostTails() != 1 || r.src.LostBytes() != 2000 {
		t.Errorf("lostTails %d lostBytes %d (losses %+v), want 1 and 2000: the once-read's size at open was 8000, the file now ends at 6000",
			r.src.LostTails(), r.src.LostBytes(), losses.all())
	}
}

// Probe (passes): no double count between the new cut branch and the
// truncation path. app.log (200,000 lines, 1.6 MB: more than the 1 MiB
// read buffer), the subscriber holding its 11th line, so the source stops
// reading at readPos < the size it saw. Cut to 1.3 MB (first bytes kept,
// above readPos): the new branch counts 1.6 MB − 1.3 MB. Then truncated to
// 0 (below readPos), no copy: markGone counts 1.3 MB − readPos. Expected:
// lostTails 2, lostBytes exactly size seen − readPos, every line below
// readPos delivered once.
func TestRev26ERProbeCutThenTruncatedCountsEachByteOnce(t *testing.T) {
	hold := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, noNotify: true,
		hold: map[string]chan struct{}{"a-00010": hold}})
	appendTo(t, r.path, numbered("a", 0, 200000)...)
	st, err := os.Stat(r.path)
	if err != nil {
		t.Fatal(err)
	}
	seen := st.Size()
	r.start()
	r.waitLines(10)
	time.Sleep(300 * time.Millisecond) // the source stopped reading; a poll saw the size
	rp := r.src.ReadPos()
	if rp >= 1300000 {
		t.Skipf("read position %d: the source read too far for this probe", rp)
	}
	if err := os.Truncate(r.path, 1300000); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the cut counted", 5*time.Second, func() bool { return r.src.LostTails() == 1 })
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the truncation counted", 5*time.Second, func() bool { return r.src.LostTails() == 2 })
	close(hold)
	r.waitSettled()
	if got, want := r.src.LostBytes(), uint64(seen-rp); got != want {
		t.Errorf("lostBytes %d, want %d (seen %d − read %d): counted twice or missed", got, want, seen, rp)
	}
	if c := counts(r.rec.all()); len(c) == 0 {
		t.Errorf("nothing delivered")
	}
}
