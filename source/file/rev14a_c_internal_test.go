// Review 14a, finding C: found and fixed in the fourteenth session.

package file

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tailfeed/pointer"
)

// w.log holds 3 lines when the glob starts: its stream's pointer is made
// (the epochs line "adopted" names its key AND its first bytes), the 3
// lines are published under the pointer's epoch E (an exactlyOnce sink
// applies them) and tailfeed is killed before the first commit: the record
// on disk names no file (offset 0, key 0, no first bytes). While tailfeed
// is down logrotate renames w.log to w.log.1 and compresses it
// (w.log.1.gz, another key; the plain file removed) and a new w.log is
// written. The change gives that pointer to the new w.log (adoptByPath, no
// longer skipping offset 0); resumeRotated then completes the record with
// GoneKey only — rec.FPLen stays 0 although the epochs line holds the
// first bytes — so neither findByKey (a .gz has another key) nor copyAt
// (an empty record matches no file by fingerprint) finds the pointer's
// generation, and the "deferLost" path reads w.log.1.gz as a later
// generation under a NEW epoch: its 3 lines, already applied under E, are
// delivered again under an epoch no sink holds — an exactlyOnce sink
// writes them twice. DESIGN §4 "find the pointer's generation: the file
// with the pointer's file key and fingerprint, or, when none, a file
// matching the fingerprint alone (a copy, or a .gz by its decompressed
// bytes)… Read it from the offset" under the pointer's epoch (§2
// "exactlyOnce … skip re-deliveries"; §4 restart: the epochs line names
// the file "so exactlyOnce sinks skip what they hold"). Before the change
// the pointer went to countGone (lostTails 1, nothing re-read).
// (Verified: at 7921d24 this test passes — the lines were counted lost,
// not re-read. A single-file feed completes the record from the epochs line
// with its first bytes (Named) and finds the .gz.)
// Observed: w.log.1.gz's lines delivered under a new epoch; 3 of 3 runs.
func TestRev14CUncommittedPointerGzippedWhileDownReadUnderNewEpoch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := t.TempDir()
	pattern := filepath.Join(dir, "*.log")
	w := filepath.Join(dir, "w.log")
	if err := os.WriteFile(w, []byte(numbered("first", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig, kill := runGlobKillable(t, pattern, data, func(*GlobConfig) {})
	lines, epochs := ig.popEpochs(time.Second, false) // published, never acknowledged: no commit
	if len(lines) != 3 {
		t.Fatalf("first run delivered %q, want w.log's 3 lines", lines)
	}
	e := epochs[0]
	var ptr string
	ig.waitFor(t, "w.log's stream has its pointer", func() bool {
		s := ig.g.byPath[w]
		if s != nil && s.ptrPath != "" {
			ptr = s.ptrPath
			return true
		}
		return false
	})
	kill()
	if r, err := pointer.Inspect(ptr); err != nil || r.Offset != 0 || r.FileKey != 0 || r.Epoch != e {
		t.Fatalf("pointer after the kill: %+v %v; want epoch %x, nothing committed", r, err, e)
	}
	// Down: logrotate with compress.
	if err := os.Rename(w, w+".1"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(w + ".1")
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(raw)
	zw.Close()
	if err := os.WriteFile(w+".1.gz", gz.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(w + ".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w, []byte(numbered("second", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, _, _ := runGlobOn(t, pattern, data)
	lines2, epochs2 := ig2.popEpochs(3*time.Second, true)
	tails, nb, detail := ig2.lost()
	for i, l := range lines2 {
		if strings.HasPrefix(l, "first-") && epochs2[i] != e {
			t.Errorf("restart: %q (applied under the pointer's epoch %x before the kill) delivered again under epoch %x: an exactlyOnce sink duplicates it (all: %q under %x; lostTails %d lostBytes %d %q)",
				l, e, epochs2[i], lines2, epochs2, tails, nb, detail)
		}
	}
}
