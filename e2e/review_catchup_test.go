package e2e

// Edge cases of the catch-up (DESIGN §11 "A restored sink is caught up
// from the input", issue 14 acceptance 4) found in review; each test names
// the contract sentence it holds the code to.

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCatchUpOtherExactlyOnceSinkSkipsOlderEpochReRead (DESIGN §2
// "Built-in sinks with exactlyOnce: true store the last applied (epoch,
// position) ... and skip re-deliveries"; brief: "delivered twice to an
// exactlyOnce sink"): one exactlyOnce file sink ("exact") is restored to a
// copy whose record is in an epoch the pointer left (the input rotated
// since); the catch-up re-reads the rest of the rotated file and the current
// file. The OTHER exactlyOnce file sink ("other"), never restored, already
// holds every one of those lines — it must skip them. Its record (layout 1)
// holds only the newest epoch, so AlreadyApplied is false for the rotated
// file's lines and, once it wrote them, for the current file's too: it
// writes both again. Its output must still be byte-identical to the input.
func TestCatchUpOtherExactlyOnceSinkSkipsOlderEpochReRead(t *testing.T) {
	e, in, _, rot, cur, _ := rotatedCatchUp(t)
	before, err := os.ReadFile(e.path("other.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := append(bytes.Clone(rot), cur...)
	if !bytes.Equal(before, want) {
		t.Fatalf("precondition: the other exactlyOnce sink holds %d bytes before the catch-up, want %d", len(before), len(want))
	}
	settledRun(t, e)
	if dups := duplicateLines(t, in, e.path("other.log")); dups > 0 {
		t.Errorf("the exactlyOnce sink that was NOT restored received %d lines twice during another sink's catch-up", dups)
	}
	sameBytes(t, "other (exactlyOnce, not restored) after another sink's catch-up", e.path("other.log"), want)
}

// catchUpEpochsLoss runs the older-generation restore of rotatedCatchUp with
// the feed's epochs file damaged by mangle while tailfeed is stopped, and
// checks DESIGN §4/§11 "Nothing green over a loss": the restored sink
// holds a record of an epoch the pointer left; with the epochs file unable
// to map it, tailfeed cannot show that no line was skipped for that sink —
// it must either catch the sink up or count the gap (lossless false). It
// must not stay green with lines missing from the sink.
func catchUpEpochsLoss(t *testing.T, mangle func(path string)) {
	e, in, _, rot, cur, _ := rotatedCatchUp(t)
	mangle(e.path("state/feeds/app.epochs"))
	_, r, f := settledRun(t, e)
	missing := missingLines(t, in, e.path("exact.log"))
	if missing > 0 && (f.Lossless || r.Lossless) {
		t.Errorf("the restored exactlyOnce sink lacks %d of %d lines, yet the feed reports lossless %v (top %v), lostTails %d, lostBytes %d, detail %v",
			missing, len(in.texts), f.Lossless, r.Lossless, f.LostTails, f.LostBytes, f.Detail)
	}
	if missing == 0 {
		sameBytes(t, "exactlyOnce output", e.path("exact.log"), append(bytes.Clone(rot), cur...))
	}
}

// TestCatchUpEpochsFileMissingCatchesUpOrCountsGap: the epochs file deleted
// (an operator cleaning dataDir, a restore of dataDir without it).
func TestCatchUpEpochsFileMissingCatchesUpOrCountsGap(t *testing.T) {
	catchUpEpochsLoss(t, func(p string) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCatchUpEpochsFileTornCatchesUpOrCountsGap: the epochs file's last line
// (the Reset that moved the pointer off the restored sink's epoch) torn, as
// a power loss during its append leaves it.
func TestCatchUpEpochsFileTornCatchesUpOrCountsGap(t *testing.T) {
	catchUpEpochsLoss(t, func(p string) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(data, []byte{'\n'})
		if len(lines) < 2 || len(bytes.TrimSpace(lines[len(lines)-1])) != 0 {
			t.Fatalf("epochs file: %q", data)
		}
		last := lines[len(lines)-2]
		torn := append(bytes.Join(lines[:len(lines)-2], nil), last[:len(last)/2]...)
		if err := os.WriteFile(p, torn, 0o600); err != nil {
			t.Fatal(err)
		}
	})
}

const reviewGlobGoneConfig = cuHeader + cuGlobFeed + `    rotateWaitMillis: 200
    pollIntervalMillis: 50
{{FORGET}}
` + cuProcessors + cuExact

// TestCatchUpCountsGoneGlobStreamFile (DESIGN §10 "A file
// that disappears with an unread tail counts in lostTails as in §4", §11 "a
// generation that is gone is counted (lostTails + 1 ...), lossless false"):
// a glob feed; the exactlyOnce sink is restored to a copy holding a.log's
// first 1,000 lines; meanwhile a.log got 2,000 more, was read to its end
// and deleted. The sink lacks those 2,000 lines and the input no longer
// holds them: the feed must count the gap and be lossy. catchUpStreams
// only looks at stream pointers that still name a file (it skips an empty
// record, and a forgotten stream has no pointer at all), so nothing is
// counted and the feed reports lossless.
func TestCatchUpCountsGoneGlobStreamFile(t *testing.T) {
	for _, tc := range []struct{ name, forget string }{
		{"gone", ""},
		{"forgotten", "    forgetAfterMillis: 300"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, strings.ReplaceAll(reviewGlobGoneConfig, "{{FORGET}}", tc.forget))
			a, _ := globInputs(t, e)
			exact := e.path("exact.log")
			settledRun(t, e)
			bak := backupSink(t, e, exact, "exact")

			d := e.start()
			appendNumbered(t, a, "a", 1000, 2000)
			d.waitFor("a.log read", 60*time.Second, func(r *report) bool {
				return r.Settled && countLines(t, exact, 0) >= 3500
			})
			if err := os.Remove(a); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // closed (rotateWaitMillis), forgotten where configured
			d.waitSettled(60 * time.Second)
			d.stop()
			bak.restore()

			_, r, f := settledRun(t, e)
			got, _ := perPrefix(t, exact, "a")
			if len(got) < 3000 && (f.Lossless || r.Lossless) {
				t.Errorf("the restored exactlyOnce sink holds %d of a.log's 3000 lines (a.log deleted), yet %s", len(got), f.lossFacts())
			}
		})
	}
}

// TestCatchUpCountsTruncatedGapInLostBytes (DESIGN §11 "a generation
// that is gone is counted (lostTails + 1, lostBytes where known), named in
// detail"): the exactlyOnce sink is restored to 3,000 lines of the
// pointer's epoch (the pointer at 7,000), and in.log is truncated to empty
// while tailfeed is stopped (no copy). The gap the sink lacks (lines
// 3,000..6,999) is gone; its size is known exactly (the pointer's offset
// minus the sink's position). The feed is lossy (lostTails 1), but
// lostBytes must be that size and detail must name the catch-up.
func TestCatchUpCountsTruncatedGapInLostBytes(t *testing.T) {
	e, in, _, bak := backedUpBehind(t)
	bak.restore()
	gap := uint64(in.size() - in.ends[2999])
	if err := os.Truncate(in.path, 0); err != nil {
		t.Fatal(err)
	}
	_, _, f := settledRun(t, e)
	detail := ""
	if f.Detail != nil {
		detail = *f.Detail
	}
	if f.Lossless || f.LostTails != 1 || f.LostBytes != gap || !strings.Contains(detail, "exact") {
		t.Errorf("the restored sink's gap (%d bytes) truncated away: lossless %v lostTails %d lostBytes %d (want 1, %d) detail %q",
			gap, f.Lossless, f.LostTails, f.LostBytes, gap, detail)
	}
}

const reviewReloadTmpl = `dataDir: ./state
status: {listen: "{{ADDR}}", token: ct-secret}
shutdownTimeoutMillis: 2000
feeds:
  - {name: app, path: ./in.log, readStrategy: COMMITTED, pollIntervalMillis: 20}
processors:
  - {name: plain, feed: app, type: file, path: ./plain.log, fsync: never}
  - {name: consumer, feed: app, type: pull, ackTimeoutMillis: 60000, maxInFlight: 10000}
`

// TestCatchUpNotOnReloadReAddedProcessor (DESIGN §12 "A new
// processor subscribes from the next line its feed publishes ... adding
// the processor back re-reads nothing"; brief: "re-read when it should
// not be: a reload"): an exactlyOnce file sink is removed by a reload
// (it had finished everything: no hold), 2,000 lines go by (a pull
// consumer takes and ACKs them), and a reload adds it back (same path: its
// record kept). The restarted feed's catch-up takes its old record for
// "restored, behind the pointer", commits the pointer back and re-reads
// the 2,000 lines; the groups' reload skip hides them from the file sinks,
// but the pull subscriber (it filters itself, so the skip does not apply)
// is handed all 2,000 again although nothing new was written.
func TestCatchUpNotOnReloadReAddedProcessor(t *testing.T) {
	exactLine := "  - {name: exact, feed: app, type: file, path: ./exact.log, exactlyOnce: true, fsync: never}\n"
	e := newEnv(t, reviewReloadTmpl+exactLine)
	in := newInput(t, e.path("in.log"))
	in.appendLines(1000)
	d := e.start()
	defer d.stop()
	ackAll(t, d, pullFromN(t, d, "consumer", 1000, ""))
	d.waitSettled(30 * time.Second)

	reload := func() {
		t.Helper()
		if code, _, body := request(t, d, "POST", "/admin/reload", ctToken, nil); code != 200 {
			t.Fatalf("reload: %d %s", code, body)
		}
	}
	reconfig(t, e, d, reviewReloadTmpl)
	reload()
	in.appendLines(2000)
	ackAll(t, d, pullFromN(t, d, "consumer", 2000, ""))
	d.waitSettled(30 * time.Second)
	reconfig(t, e, d, reviewReloadTmpl+exactLine)
	reload()
	again := pullFrom(t, d, "consumer", "max=5000&wait=1500ms")
	ackAll(t, d, again)
	caught := strings.Contains(d.log(), "committing the pointer back")
	if len(again) > 0 || caught {
		t.Errorf("adding a processor back by a reload: catch-up logged %v; the pull consumer was handed %d lines again (nothing new was written)", caught, len(again))
	}
}

// TestCatchUpCountsMiddleGenerationGone (DESIGN §11: "caught
// up from that generation onward ...: the rest of it from the sink's
// position, every later generation still on disk, then the current file
// ...; a generation that is gone is counted (lostTails + 1, lostBytes where
// known), named in detail, lossless false"): three generations; the
// exactlyOnce sink is restored into the oldest (in.log.2, still on disk);
// the MIDDLE one (in.log.1, 700 lines the sink never had) was deleted while
// tailfeed was stopped. The catch-up reads the rest of in.log.2, then
// in.log; the sink lacks the 700 lines of in.log.1 and they are gone: the
// feed must be lossy. Only the catch-up's own generation is checked for
// being gone, so nothing is counted: lossless true.
func TestCatchUpCountsMiddleGenerationGone(t *testing.T) {
	e := newEnv(t, catchUpConfig)
	in := newInput(t, e.path("in.log"))
	exact := e.path("exact.log")
	d, _, bak := backedUpThenMore(t, e, in, 1000, 500)
	rotateInput(t, d, in, exact, 700, 2200, nil) // gen 2: lines 1500..2199
	rotateInput(t, d, in, exact, 300, 2500, nil) // gen 3 (current): lines 2200..2499
	d.stop()
	bak.restore()
	if err := os.Remove(in.path + ".1"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	_, r, f := settledRun(t, e)
	if missing := missingLines(t, in, exact); missing > 0 && (f.Lossless || r.Lossless) {
		t.Errorf("the restored exactlyOnce sink lacks %d lines (in.log.1, deleted), yet %s", missing, f.lossFacts())
	}
}

// TestCatchUpCountsCurrentFileTruncatedUnderOlderEpoch (DESIGN §4
// "a truncation found at restart with no copy ... while the pointer was
// past 0 counts one lost tail"; §11 "a generation that is gone is
// counted"): the exactlyOnce sink is restored into the rotated file's
// epoch (as in TestCatchUpOlderGeneration) and, while tailfeed is stopped,
// the current file in.log (2,000 lines the sink lacks, the pointer past
// them) is truncated to empty (no copy). Without the catch-up the start
// counts the truncation (lostTails 1). With it, the pointer was committed
// back into the older epoch first, so the truncation of the pointer's file
// is never compared with the pointer's offset: the 2,000 lines are
// missing from the restored sink and nothing is counted.
func TestCatchUpCountsCurrentFileTruncatedUnderOlderEpoch(t *testing.T) {
	e, in, _, _, _, _ := rotatedCatchUp(t)
	if err := os.Truncate(in.path, 0); err != nil {
		t.Fatal(err)
	}
	_, _, f := settledRun(t, e)
	if missing := missingLines(t, in, e.path("exact.log")); missing > 0 && (f.Lossless || f.LostTails == 0) {
		t.Errorf("the restored exactlyOnce sink lacks %d lines (in.log truncated while stopped), yet %s", missing, f.lossFacts())
	}
}

// TestCatchUpOutputOnlyRestoredNotLossless (DESIGN §4 "Nothing
// green over a loss"; §11): only the exactlyOnce sink's OUTPUT is put back
// to an earlier copy (3,000 lines), its record stays the newer one (7,000
// lines). At open the sink finds its record longer than its output ("the
// output lost bytes it had seen"), gives the record up and reports no
// done-through mark, so the catch-up takes it for a new sink: nothing is
// re-read, the 4,000 lines the output lost are gone from it, and the feed
// stays lossless although the sink itself detected the loss.
func TestCatchUpOutputOnlyRestoredNotLossless(t *testing.T) {
	e, in, exact, bak := backedUpBehind(t)
	copyFile(t, bak.bout, exact) // the output only
	d, _, f := settledRun(t, e)
	if missing := missingLines(t, in, exact); missing > 0 && f.Lossless {
		t.Errorf("the exactlyOnce output lacks %d lines (its record was longer: logged %v), yet lossless %v lostTails %d",
			missing, strings.Contains(d.log(), "the output lost bytes it had seen"), f.Lossless, f.LostTails)
	}
}

// TestCatchUpAcrossFreshPointerEpoch (DESIGN §11 "A
// sink whose epoch is an older one of feeds/<feed>.epochs (§4) is caught up
// from that generation onward if it is still on disk ...; a generation
// that is gone is counted"): the pointer file lost both slots once (a
// fresh start under a new epoch, the file re-read from 0 — no decision at
// that start, as §11 says). At a LATER start the exactlyOnce sink is
// restored to a copy from before that: its record names the pointer's
// previous epoch, which the epochs file lists. The fresh start's epochs
// line names no previous epoch, so internal/catchup finds the sink's epoch
// "not on the way to the pointer's" and returns nothing: the sink is
// neither caught up nor counted, 4,000 lines are missing from it and the
// feed reports lossless.
func TestCatchUpAcrossFreshPointerEpoch(t *testing.T) {
	e, in, exact, bak := backedUpBehind(t)
	// Both slots lost (a pointer file shorter than 1,024 bytes): a fresh
	// start at 0 under a new epoch re-reads the file.
	if err := os.Truncate(e.path("state/feeds/app.ptr"), 100); err != nil {
		t.Fatal(err)
	}
	settledRun(t, e)
	bak.restore()
	d, _, f := settledRun(t, e)
	if missing := missingLines(t, in, exact); missing > 0 && f.Lossless {
		t.Errorf("the restored exactlyOnce sink (record in the epoch before the fresh pointer, its file still on disk) lacks %d lines; catch-up logged %v; lossless %v lostTails %d",
			missing, strings.Contains(d.log(), "committing the pointer back"), f.Lossless, f.LostTails)
	}
}
