package file

// Review 15a A, the part left open since the fifteenth session (fixed in
// the twenty-second): a glob stream given the previous run's pointer at a
// start read a generation (F1's tail), then a later one (F2), was preempted
// on F2, and F2 was deleted while it waited; its next source, the
// pointer's file gone, took the later generations by the pointer file's
// mtime and read F1 again (two lines twice, no crash, 7 of 7 runs). The
// files a stream's earlier sources switched away from are now passed on
// (Config.prevGens). The whole scenario (30 s: 200,000 lines and a busy
// file) stays out of the default build for CI's time:
// open_rev15a_a_internal_test.go (-tags openfindings), passing since.

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// prevGen takes a generation for one an earlier source switched away from
// only by its key and first bytes, and only while it is no longer than
// where its lines ended then (grown since: read again — duplicates, never
// the late lines lost).
func TestPrevGenTellsAFileReadToItsEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "w.log.1")
	body := []byte("f1-0\nf1-1\n")
	if err := os.WriteFile(p, body, 0o600); err != nil {
		t.Fatal(err)
	}
	dev, ino, err := fileutil.DevInoPath(p)
	if err != nil {
		t.Fatal(err)
	}
	key := pointer.FileKey(dev, ino)
	n := int64(len(body))
	fp := pointer.Fingerprint(body)
	other := pointer.Fingerprint([]byte("other-0\nother-1\n"))
	for _, tc := range []struct {
		name  string
		g     GenDone
		found int64
		want  bool
	}{
		{"read to its end", GenDone{Key: key, FPLen: len(body), FP: fp, End: n}, n, true},
		{"grown since", GenDone{Key: key, FPLen: len(body), FP: fp, End: n - 5}, n, false},
		{"another file on the key", GenDone{Key: key, FPLen: len(body), FP: other, End: n}, n, false},
		{"another key", GenDone{Key: key + 1, FPLen: len(body), FP: fp, End: n}, n, false},
	} {
		s := &Source{cfg: Config{prevGens: []GenDone{tc.g}}}
		if got := s.prevGen(genFile{path: p, dev: dev, ino: ino, found: tc.found}); got != tc.want {
			t.Errorf("%s: prevGen = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The plumbing: a genOwn stream's source reads the pointer's file's tail
// (w.log.1), switches to its own file and closes as inactive; the glob
// keeps w.log.1 (its key, first bytes, its end) for the stream's next
// source.
func TestGlobKeepsTheFilesASourceSwitchedAwayFrom(t *testing.T) {
	t.Parallel()
	dir, data, _, w := genOwnStopped(t, 2)
	ig, stop := runGlobWith(t, filepath.Join(dir, "*.log"), data, time.Second, func(c *GlobConfig) {
		c.CloseInactive = 100 * time.Millisecond
	}, nil)
	defer stop()
	wantLines(t, ig.popLines(2*time.Second), "tail-0", "tail-1", "n-0", "n-1", "n-2")
	st, err := os.Stat(w + ".1")
	if err != nil {
		t.Fatal(err)
	}
	dev, ino, err := fileutil.DevInoPath(w + ".1")
	if err != nil {
		t.Fatal(err)
	}
	ig.waitFor(t, "w.log's stream closed as inactive, w.log.1 noted", func() bool {
		s := ig.g.byPath[w]
		return s != nil && s.st == stClosed && len(s.gens) > 0
	})
	ig.g.mu.Lock()
	gens := ig.g.byPath[w].gens
	ig.g.mu.Unlock()
	if len(gens) != 1 || gens[0].Key != pointer.FileKey(dev, ino) || gens[0].End != st.Size() {
		t.Fatalf("gens = %+v, want w.log.1 (key %x) ended at %d", gens, pointer.FileKey(dev, ino), st.Size())
	}
}
