// Review 18d (of 277dbe1, adoptByPath: the latest-born pointer file wins
// where every candidate's file is found beside the path): one finding,
// failing on 277dbe1 (3 of 3), found and fixed in the eighteenth session —
// the pointer of the file written last (its mtime) wins now.

package file

import (
	"os"
	"testing"
	"time"
)

// w.log (A) is read in a first run, then renamed within the glob to x.log
// (its stream keeps pointer O, first path w.log); a new w.log (B) gets
// pointer P. In the second run the application, still holding A open,
// writes three more lines to it (x.log) well after B's last write: O reads
// and commits A to its end, P B to its end. While stopped: x.log → w.log.2,
// w.log → w.log.1, a new w.log (C). At the third start both candidates'
// files are beside w.log with birth times: B (born last) wins, so C's source
// reads B from P's offset (its end) and then every generation modified
// since B — A, modified after B, is read from its start (the born filter
// spares only files last modified before the reference). All of A's lines,
// delivered and committed, are read again; O (besideAtStart) reads A from
// its end. (With O, the one written last, A is read from its end and B,
// modified more than mtimeSlack before A, is not a later generation.)
func TestRev18DALatestBornPointerRereadsAnOlderFileWrittenLater(t *testing.T) {
	t.Parallel()
	r := newRev18cRig(t)
	r.write(r.w, numbered("ga", 3))
	if birthTimeTarget(r.w).IsZero() {
		t.Skip("no birth times")
	}
	r.run(1500*time.Millisecond, nil)
	r.rename(r.w, r.x)
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gb", 3))
	got, _, _, _ := r.run(4*time.Second, func(ig *internalGlob) {
		time.Sleep(2600 * time.Millisecond) // B last written > mtimeSlack before A
		f, err := os.OpenFile(r.x, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(numbered("gx", 3))
		f.Close()
	})
	for _, l := range []string{"gb-0", "gx-0", "gx-2"} {
		if got[l] != 1 || got["ga-0"] != 0 {
			t.Fatalf("second run delivered %v", got)
		}
	}
	r.rename(r.x, r.w+".2")
	r.rename(r.w, r.w+".1")
	time.Sleep(20 * time.Millisecond)
	r.write(r.w, numbered("gc", 3))
	got, tails, bytes, detail := r.run(2500*time.Millisecond, nil)
	for _, l := range []string{"ga-0", "ga-2", "gx-0", "gx-2", "gb-0", "gb-2"} {
		if got[l] != 0 {
			t.Errorf("%s delivered %d times again at the third start (read, acknowledged and committed before; delivered %v)", l, got[l], got)
		}
	}
	if got["gc-0"] != 1 || got["gc-2"] != 1 {
		t.Errorf("the new w.log's lines: delivered %v", got)
	}
	if tails != 0 || bytes != 0 {
		t.Errorf("third start: lostTails %d lostBytes %d %q; nothing was lost", tails, bytes, detail)
	}
}
