package kafka

import (
	"path/filepath"
	"testing"
	"time"

	"tailfeed/pointer"
)

// A glob feed writes the "created" lines of the new streams of a start
// ahead (file key 0); each stream's "adopted" line, naming its file, comes
// when the stream opens its file, before its first line is published. The
// offsets records' fileKey of a stream whose adopted line came after the
// sink first read the epochs file (for another stream's batch) is its
// file's key, not the 0 the created line held at that read.
func TestFileKeyOfAnEpochAdoptedAfterTheFirstRead(t *testing.T) {
	epochs := filepath.Join(t.TempDir(), "f.epochs")
	if err := pointer.AppendCreated(epochs, []uint64{0xe1, 0xe2}); err != nil {
		t.Fatal(err)
	}
	adopt := func(e, key uint64) {
		t.Helper()
		if err := pointer.AppendEpoch(epochs, pointer.EpochLine{Epoch: e, FileKey: key, FPLen: 2, FP: 5, Path: "/in/x.log", Time: time.Now(), Reason: "adopted"}); err != nil {
			t.Fatal(err)
		}
	}
	adopt(0xe1, 0xa1)
	s := &Sink{cfg: Config{EpochsFile: epochs}, fileKeys: map[uint64]string{}}
	if k := s.fileKey(0xe1); k != "00000000000000a1" {
		t.Fatalf("fileKey(e1) = %q", k)
	}
	adopt(0xe2, 0xa2)
	if k := s.fileKey(0xe2); k != "00000000000000a2" {
		t.Fatalf("fileKey(e2) after its adopted line = %q, want 00000000000000a2", k)
	}
	if k := s.fileKey(0xe9); k != "" {
		t.Fatalf("fileKey of an epoch the file does not name = %q", k)
	}
}
