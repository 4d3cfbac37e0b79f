package file

// Review 25f, internal probes (pass): what gzTwinTold gives now.
// go test -count=1 -v -run 'TestRev25FRProbe' ./source/file

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Probe (no finding): a torn .gz of a twin over 4 KiB is told once its
// flushed prefix decompresses to 4 KiB (len(head) == MaxFingerprint skips
// the whole-check); under that it is untold. A real gzip's torn .gz of a
// large file decompresses far past 4 KiB from its first write (Go's flate
// returns what it decoded up to the tear; here a 3,000-byte prefix of a
// real gzip -6 output gave 24 KiB), so it is told at once. A whole
// snapshot of the twin's first bytes (gzip -k while the application wrote
// on) is told; a torn one under 4 KiB of a longer twin is not, and
// inspectGz runs on each such call (cheap: under 4 KiB decompressed, or a
// torn stream read to its tear).
func TestRev25FRProbeGzTwinToldPrefixes(t *testing.T) {
	dir := t.TempDir()
	twin := filepath.Join(dir, "app.log.1")
	data := []byte(strings.Repeat("line of the twin, numbered 0000\n", 320)) // ~10 KiB
	if err := os.WriteFile(twin, data, 0o644); err != nil {
		t.Fatal(err)
	}
	gz := func(cut int, whole bool) []byte {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(data[:cut])
		if whole {
			w.Close()
		} else {
			w.Flush()
		}
		return b.Bytes()
	}
	for _, c := range []struct {
		name  string
		cut   int
		whole bool
		want  bool
	}{
		{"torn, 5000 bytes flushed", 5000, false, true},
		{"torn, 4096 bytes flushed", 4096, false, true},
		{"torn, 2000 bytes flushed", 2000, false, false},
		{"whole snapshot of 2000 bytes", 2000, true, true},
		{"whole snapshot of 6000 bytes", 6000, true, true},
	} {
		if err := os.WriteFile(twin+".gz", gz(c.cut, c.whole), 0o644); err != nil {
			t.Fatal(err)
		}
		tw, told := gzTwinTold(twin + ".gz")
		if tw != twin || told != c.want {
			t.Errorf("%s: gzTwinTold = %q, %v (want told %v)", c.name, tw, told, c.want)
		}
	}
}
