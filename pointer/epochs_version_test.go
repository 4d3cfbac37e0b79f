package pointer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEpochsVersion: new lines carry "v":1; a line without it (an older
// tailfeed's) reads as version 1; a line of a newer version is skipped and
// named in the error (FILE:LINE), with the other lines returned.
func TestEpochsVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.epochs")
	if err := AppendEpoch(path, EpochLine{Epoch: 7, Time: time.Unix(1, 0), Reason: "created"}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(raw), `{"v":1,"epoch":"0000000000000007",`) {
		t.Fatalf("new line %s does not start with \"v\":1", raw)
	}
	old := `{"epoch":"0000000000000008","fileKey":"0000000000000000","fingerprintLength":0,"fingerprint":"0000000000000000","path":"","time":"2026-01-02T15:04:05Z","reason":"fresh"}` + "\n"
	future := `{"v":2,"epoch":"0000000000000009","somethingNew":1}` + "\n"
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(old + future)
	f.Close()
	got, err := ReadEpochs(path)
	if len(got) != 2 || got[0].Epoch != 7 || got[1].Epoch != 8 || got[1].Reason != "fresh" {
		t.Fatalf("lines %+v, want epochs 7 and 8", got)
	}
	if err == nil || !strings.Contains(err.Error(), path+":3: version 2") {
		t.Fatalf("error %v, want one naming %s:3 and version 2", err, path)
	}
}
