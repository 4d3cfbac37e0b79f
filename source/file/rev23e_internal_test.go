package file

// Review 23e (of a4bb55c: plainCopyOf for the cut path file's window,
// namedAs.contentOnly). (A glob-matched plain copy of the cut path file,
// which findCopyBy takes when not resuming and plainCopyOf skips, was
// tried: its gap was read, no loss.)

import (
	"strings"
	"testing"
)

// A: 23d C's layout, H's file written to after its stream closed it. H's
// file (bound while short, grown past 4 KiB: its record names its whole
// first 4 KiB) is rotated live to w.log.1 with an empty w.log made; H's
// stream reads it to its end, commits and closes: its pointer is held.
// While stopped the application writes 3 more lines to H's file (its
// descriptor still open), then logrotate shifts and compresses it
// (w.log.2.gz) and moves the empty w.log to w.log.1 (nocreate). O's x.log
// goes out beside the path (w.log.9: readGaps runs). countGone finds H's
// file gone with its held mark: "forgotten" (its previous identity H's
// whole 4 KiB). Plain and grown, heldDone would count it lost (FoundSize
// past the mark's end); compressed, before a4bb55c countGzGap counted the
// .gz (its decompressed bytes); now the forgotten line's previous identity
// (contentOnly) names its whole fingerprint in countGzGap's whole-content
// loop: the .gz is skipped, its 3 late lines neither read nor counted.
func TestRev23EAHeldFileGrownAfterCloseCompressedTailSilentlyLost(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.firstStart(numbered("ga", 3), nil)
	r.heldReadToItsEnd()
	// While stopped.
	late := numbered("late", 3)
	rev23dAppend(t, r.w+".1", late)
	got, tails, bytes, detail := r.heldCompressedStart()
	delivered := rev23bGapLines(got, "late", 3)
	t.Logf("third start: late lines delivered %d; lostTails %d lostBytes %d %q (delivered %d distinct lines)", delivered, tails, bytes, detail, len(got))
	if delivered == 0 && tails == 0 && !strings.Contains(detail, "w.log.2.gz") {
		t.Errorf("H's file, written to (%d bytes) after its stream read it to its end and closed, compressed while stopped (w.log.2.gz), is neither read nor counted: the \"forgotten\" line countGone wrote at this start names its whole 4 KiB (contentOnly) and countGzGap skips it (lostTails %d lostBytes %d %q)",
			len(late), tails, bytes, detail)
	}
}
