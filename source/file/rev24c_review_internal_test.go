package file

// Review 24c (independent review of ad42dc9: gapTwin, gapFile.inWindow /
// unread, countGap, twinDone in readGaps). Fixed: A (a twin counted from
// an offset is noted under its .gz's key too), B and B' (a plain file of a
// .gz's name is its twin only when it holds the .gz's first bytes: gzTwin)
// and C (the twin looked at from its .gz, whatever its name).

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
	"tailfeed/overload"
	"tailfeed/pointer"
)

// rev24crGlob is an un-run Glob over dir/*.log with its epochs file in
// data (as rev24b's review builds one to call gapTwin directly).
func rev24crGlob(t *testing.T, dir, data string) *Glob {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(data, "feeds", "f"), 0o700); err != nil {
		t.Fatal(err)
	}
	pub := feed.NewPublisher("f", []*feed.Queue{feed.NewQueue("rec", 64, 1<<20, overload.Policy{Kind: overload.Pause})}, 64, 16)
	g, err := NewGlob(GlobConfig{
		Stream:     Config{Feed: "f", Path: filepath.Join(dir, "*.log"), Strategy: Committed, Outputs: []string{data}},
		PointerDir: filepath.Join(data, "feeds", "f"),
		EpochsPath: filepath.Join(data, "feeds", "f.epochs"),
	}, pub)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.mux.close)
	return g
}

func rev24crLost(g *Glob) (uint64, uint64, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.acc.lostTails, g.acc.lostBytes, g.detail
}

// A: the gzOnly twin counted from an offset (gapTwin: a file read to its
// end and let go — a "forgotten" line naming its whole first 4 KiB with
// the offset it was read to — grown since, being compressed at this
// start: w.log.1 and w.log.1.gz both beside the path). gapTwin counts the
// twin's bytes past that offset and notes the count with an epochs "lost"
// line under the TWIN's key and first bytes. gzip then finishes (the twin
// unlinked, only w.log.1.gz left, another key). At the next start
// (readGaps runs again: a restart before the streams taken beside moved
// on) countGzGap looks at the .gz: the epochs file names no line under
// its key; the "lost" line is skipped in the whole-content loop
// (counted); the "forgotten" line still matches its whole 4 KiB with
// readTo < size: the same bytes are counted lost a second time. Before
// ad42dc9 the .gz itself was counted (its own key in the "lost" line), so
// a later start skipped it. Both starts are called here as readGaps calls
// them (gapTwin at the first, countGzGap at the second). (Reaching
// gapTwin's offset case from outside needs a "forgotten" line with an
// offset — countGone's held, excluded or copied file — whose whole first
// 4 KiB a plain twin beside the path holds while gzip runs: not built
// end to end here.)
func TestRev24CRTwinCountedFromOffsetCountedAgainOnceOnlyItsGzRemains(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	first := filepath.Join(dir, "w.log")
	twin := first + ".1"
	big := numbered("big", 600) // past 4 KiB: a whole fingerprint
	tail := numbered("late", 3)
	if err := os.WriteFile(twin, []byte(big+tail), 0o600); err != nil {
		t.Fatal(err)
	}
	gzipLikeGzip(t, twin, twin+".gz", true) // gzip running: the twin still beside its .gz
	st, err := os.Stat(twin)
	if err != nil {
		t.Fatal(err)
	}
	dev, ino, err := fileutil.DevInoPath(twin)
	if err != nil {
		t.Fatal(err)
	}
	twinKey := pointer.FileKey(dev, ino)
	head := []byte(big[:pointer.MaxFingerprint])
	readTo := int64(len(big))
	low, upMod := st.ModTime().Add(-time.Minute), st.ModTime().Add(time.Minute)

	// First start: countGone's "forgotten" line (written at this start)
	// for the file read to readTo, then readGaps (gzOnly) visits the twin.
	g := rev24crGlob(t, dir, data)
	epochs := filepath.Join(data, "feeds", "f.epochs")
	forgotten := pointer.EpochLine{Epoch: pointer.NewEpoch(), Path: first, Time: time.Now(), Reason: "forgotten",
		PrevEpoch: pointer.NewEpoch(), PrevOffset: readTo, PrevFileKey: twinKey, PrevFPLen: pointer.MaxFingerprint, PrevFP: pointer.Fingerprint(head)}
	if err := appendEpochs(epochs, []pointer.EpochLine{forgotten}); err != nil {
		t.Fatal(err)
	}
	g.startAt = forgotten.Time.Add(-time.Millisecond)
	named := g.epochsNamed()
	g.gapTwin(twin, first, low, upMod, time.Time{}, time.Time{}, nil, named)
	tails, bytes, detail := rev24crLost(g)
	t.Logf("first start: lostTails %d lostBytes %d %q", tails, bytes, detail)
	if tails != 1 || bytes != uint64(len(tail)) {
		t.Fatalf("first start: lostTails %d lostBytes %d, want the twin's %d bytes past offset %d counted once (%q)", tails, bytes, len(tail), readTo, detail)
	}

	// gzip finishes: the twin unlinked, w.log.1.gz left. Next start.
	if err := os.Remove(twin); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	g2 := rev24crGlob(t, dir, data)
	g2.startAt = time.Now()
	named2 := g2.epochsNamed()
	g2.countGzGap(twin+".gz", first, low, upMod, time.Time{}, time.Time{}, nil, named2)
	tails2, bytes2, detail2 := rev24crLost(g2)
	lines, _ := pointer.ReadEpochs(epochs)
	for _, l := range lines {
		t.Logf("epochs: %s key %x fpLen %d prevKey %x prevFPLen %d prevOffset %d %s", l.Reason, l.FileKey, l.FPLen, l.PrevFileKey, l.PrevFPLen, l.PrevOffset, l.Path)
	}
	if tails2 != 0 || bytes2 != 0 {
		t.Errorf("the next start counted the twin's .gz again (the %d bytes past offset %d counted at the first start, noted by a \"lost\" line under the twin's key %x): lostTails %d lostBytes %d %q",
			len(tail), readTo, twinKey, tails2, bytes2, detail2)
	}
}

// rev24crGapCompressed: rev24aRig's layout (O's file read, renamed to x.log;
// the gap w.log.1 written; P's w.log read by the second start), then,
// while stopped, O's file out beside the path (w.log.3) and the gap
// compressed (w.log.1.gz, logrotate's compress without delaycompress).
func rev24crGapCompressed(t *testing.T) *rev18cRig {
	t.Helper()
	r := rev24aRig(t)
	r.gapCompressedBeside(r.w + ".3")
	return r
}

// gapCompressedBeside, while stopped: x.log (O's file) out beside the
// path (to) and the gap compressed (w.log.1.gz, its plain file removed).
func (r *rev18cRig) gapCompressedBeside(to string) {
	r.t.Helper()
	r.rename(r.x, to)
	gzipLikeGzip(r.t, r.w+".1", r.w+".1.gz", false)
}

// laterPlainBesideGz, while stopped: P's file rotated to w.log.2 and
// compressed (gzOnly); more than mtimeSlack later a later generation L
// (l) written to w.log and rotated to the plain w.log.1 (beside the gap's
// w.log.1.gz), a new w.log (newer) 20 ms later.
func (r *rev18cRig) laterPlainBesideGz(l, newer string) {
	r.t.Helper()
	r.rename(r.w, r.w+".2")
	gzipLikeGzip(r.t, r.w+".2", r.w+".2.gz", false) // P compressed: gzOnly
	time.Sleep(mtimeSlack + 200*time.Millisecond)
	r.write(r.w, l)           // L
	r.rotate(r.w+".1", newer) // L plain, beside the gap's w.log.1.gz
}

// wantGapReadOrCountedOnce: the gap's 3 lines were delivered, or its gap
// bytes counted lost once.
func wantGapReadOrCountedOnce(t *testing.T, got map[string]int, tails, bytes uint64, gap int, format string, args ...any) {
	t.Helper()
	if n := rev23bGapLines(got, "gap", 3); n == 0 && (tails != 1 || bytes != uint64(gap)) {
		t.Errorf(format, args...)
	}
}

// wantGcOnce: the start delivered gc-0 to gc-2 once.
func wantGcOnce(t *testing.T, got map[string]int) {
	t.Helper()
	if rev23bGapLines(got, "gc", 3) != 3 {
		t.Errorf("third start delivered %v, want gc-0..2 once", got)
	}
}

// B (gzOnly): the compressed gap G (w.log.1.gz) is left beside the path
// by an earlier rotation while a plain w.log.1 of another generation is
// made beside it — logrotate with "compress", then "delaycompress" added
// while tailfeed is down: the shift renames the plain w.log.1 (not
// w.log.1.gz) and compresses only the shifted one. Here P's file (the
// path's pointer's) goes to w.log.2.gz (gzOnly), the later generation L
// ("gd" lines, written more than mtimeSlack after P) to the plain
// w.log.1, and a new w.log ("gc") is made. readGaps visits L, sees
// w.log.1.gz beside it and marks the .gz twinDone; gapTwin finds L out of
// the window (a later generation P's source reads) and returns; the .gz
// is never looked at (and countGzGap itself returns for any .gz with a
// plain file of its name beside it). G's 3 lines are neither read nor
// counted: lossless true.
func TestRev24CRGzOnlyGapBesideAPlainNonTwinOfItsNameSilentlyLost(t *testing.T) {
	t.Parallel()
	r := rev24crGapCompressed(t)
	r.laterPlainBesideGz(numbered("gd", 3), numbered("gc", 3)) // L plain, beside G's w.log.1.gz
	got, tails, bytes, detail := r.startFor("third", 2500*time.Millisecond)
	gap := len(numbered("gap", 3))
	wantGapReadOrCountedOnce(t, got, tails, bytes, gap, "the compressed gap w.log.1.gz (%d decompressed bytes, read by no stream) beside a plain w.log.1 that is not its twin: neither read nor counted (lostTails %d lostBytes %d %q)",
		gap, tails, bytes, detail)
	if rev23bGapLines(got, "gd", 3) != 3 || rev23bGapLines(got, "gc", 3) != 3 {
		t.Errorf("third start delivered %v, want gd-0..2 and gc-0..2 once", got)
	}
}

// B' (not gzOnly, the path unchanged by ad42dc9): the same with P's file
// left plain at w.log.1 (delaycompress added before its rotation) beside
// G's w.log.1.gz. countGzGap returns for G because a plain w.log.1 is
// beside it ("its plain twin's (readGap)"); readGap finds w.log.1 to be
// P's file (the path's pointer's: not a gap). G's 3 lines are neither read
// nor counted.
func TestRev24CRGapBesideThePointersPlainFileOfItsNameSilentlyLost(t *testing.T) {
	t.Parallel()
	r := rev24crGapCompressed(t)
	r.rotate(r.w+".1", numbered("gc", 3)) // P, plain (delaycompress)
	got, tails, bytes, detail := r.startFor("third", 2500*time.Millisecond)
	gap := len(numbered("gap", 3))
	wantGapReadOrCountedOnce(t, got, tails, bytes, gap, "the compressed gap w.log.1.gz (%d decompressed bytes, read by no stream) beside P's plain w.log.1: neither read nor counted (lostTails %d lostBytes %d %q)",
		gap, tails, bytes, detail)
	wantGcOnce(t, got)
}

// rev24crRunNames is rev18cRig.run with the stream's rotatedNames set
// (the operator's list of generation names; runGlobOn's config otherwise).
func (r *rev18cRig) rev24crRunNames(names []string, d time.Duration) (map[string]int, uint64, uint64, string) {
	t := r.t
	t.Helper()
	ig := &internalGlob{ptrDir: filepath.Join(r.data, "feeds", "f")}
	ig.q = feed.NewQueue("rec", 4096, 8<<20, overload.Policy{Kind: overload.Pause})
	ig.pub = feed.NewPublisher("f", []*feed.Queue{ig.q}, 65536, 512)
	g, err := NewGlob(GlobConfig{
		Stream: Config{Feed: "f", Path: r.pattern, Strategy: Committed, Poll: 50 * time.Millisecond,
			RotateWait: 200 * time.Millisecond, CommitSync: 5 * time.Millisecond, BatchLines: 512, Outputs: []string{r.data},
			RotatedNames: names},
		PointerDir:    ig.ptrDir,
		EpochsPath:    filepath.Join(r.data, "feeds", "f.epochs"),
		ScanInterval:  100 * time.Millisecond,
		MaxOpenFiles:  16,
		CloseInactive: 50 * time.Millisecond,
		ForgetAfter:   time.Minute,
	}, ig.pub)
	if err != nil {
		t.Fatal(err)
	}
	g.drainBound = 300 * time.Millisecond
	ig.g = g
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Run(ctx)
	}()
	c := ig.consumeAll()
	time.Sleep(d)
	got := c()
	tails, bytes, detail := ig.lost()
	cancel()
	<-done
	dctx, cc := context.WithTimeout(context.Background(), 5*time.Second)
	g.Drain(dctx)
	cc()
	g.Close()
	return got, tails, bytes, detail
}

// C (gzOnly, a regression of ad42dc9): the scenario of review 24a C — the
// gap compressed while its plain twin is still beside it (the .gz whole,
// gzip not yet past its unlink, or gzip -k), P's file compressed too —
// with the operator's rotatedNames listing the compressed generations
// only ("w.log.*.gz": logrotate's compress without delaycompress makes no
// other). eachRotated never visits the plain twin w.log.1 (not a
// generation name), so gapTwin is not called; countGzGap now returns for
// any .gz whose plain twin exists ("its plain twin's (readGap, or
// gapTwin)"). The gap's 3 lines are neither read nor counted. At d60524a
// countGzGap (readTwin) went on and read the twin (readGzTwin).
func TestRev24CRGzOnlyTwinNotAGenerationNameGapNeitherReadNorCounted(t *testing.T) {
	t.Parallel()
	r := rev24aGzOnly(t, true) // the plain twin still there
	got, tails, bytes, detail := r.rev24crRunNames([]string{"w.log.*.gz"}, 2500*time.Millisecond)
	t.Logf("third start: lostTails %d lostBytes %d %q (delivered %v)", tails, bytes, detail, got)
	gap := len(numbered("gap", 3))
	wantGapReadOrCountedOnce(t, got, tails, bytes, gap, "the compressed gap w.log.1.gz (%d decompressed bytes) with its plain twin beside it, rotatedNames listing .gz names only: neither read nor counted (lostTails %d lostBytes %d %q)",
		gap, tails, bytes, detail)
	wantGcOnce(t, got)
}
