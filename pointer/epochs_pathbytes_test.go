package pointer

import (
	"path/filepath"
	"testing"
	"time"
)

// An epoch's path that is not UTF-8 reads back exactly (pathBase64): a glob
// stream keeps the path it was first matched under across a restart
// (audit 10B: JSON alone gave U+FFFD for each bad byte).
func TestEpochsKeepPathBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.epochs")
	for i, p := range []string{"/logs/a\xff\xfe.log", "/logs/é.log"} {
		if err := AppendEpoch(path, EpochLine{Epoch: uint64(i + 1), FileKey: 7, Path: p, Time: time.Now(), Reason: "created"}); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := ReadEpochs(path)
	if err != nil || len(ls) != 2 {
		t.Fatalf("%d lines, %v", len(ls), err)
	}
	if ls[0].Path != "/logs/a\xff\xfe.log" || ls[1].Path != "/logs/é.log" {
		t.Errorf("paths %q %q", ls[0].Path, ls[1].Path)
	}
}
