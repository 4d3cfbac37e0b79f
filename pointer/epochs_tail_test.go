package pointer

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The last line of the epochs file (read at every adoption: every new glob
// stream's first read) comes from a small window: 10,000 streams starting
// read 8 KiB each before, the largest allocation of such a start. A last
// line longer than the small window (a long path) is still read whole.
func TestLastEpochLineSmallWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.epochs")
	for i := range 50 {
		if err := AppendEpoch(path, EpochLine{Epoch: uint64(i + 1), FileKey: 7, Path: "/var/log/app/a.log", Time: time.Now(), Reason: "created"}); err != nil {
			t.Fatal(err)
		}
	}
	l, ok := lastEpochLine(path)
	if !ok || l.Epoch != 50 {
		t.Fatalf("last line %+v, %v", l, ok)
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	const calls = 100
	for range calls {
		lastEpochLine(path)
	}
	runtime.ReadMemStats(&m1)
	if per := (m1.TotalAlloc - m0.TotalAlloc) / calls; per > 4<<10 {
		t.Fatalf("reading the last line allocated %d bytes a call, want at most 4 KiB", per)
	}

	long := "/var/log/" + strings.Repeat("d", 3000) + "/a.log"
	if err := AppendEpoch(path, EpochLine{Epoch: 51, FileKey: 7, Path: long, Time: time.Now(), Reason: "adopted"}); err != nil {
		t.Fatal(err)
	}
	if l, ok := lastEpochLine(path); !ok || l.Epoch != 51 || l.Path != long {
		t.Fatalf("a last line longer than 1 KiB: epoch %x, path of %d bytes, %v", l.Epoch, len(l.Path), ok)
	}
}
