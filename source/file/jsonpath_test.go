package file

import (
	"encoding/json"
	"testing"
)

// A file name that is not UTF-8 comes back from the stop lists exactly
// (audit 10B: JSON alone gives U+FFFD for each bad byte: another path).
func TestStopListsKeepPathBytes(t *testing.T) {
	for _, p := range []string{"/logs/a\xff\xfe.log", "/logs/plain.log", "/logs/é.log"} {
		b, err := json.Marshal(unreadEntry{Key: 1, Path: p, First: p + "x", Out: true})
		if err != nil {
			t.Fatal(err)
		}
		var u unreadEntry
		if err := json.Unmarshal(b, &u); err != nil || u.Path != p || u.First != p+"x" || u.Key != 1 || !u.Out {
			t.Errorf("unread entry %q → %s → %+v (%v)", p, b, u, err)
		}
		b, err = json.Marshal(movedEntry{Epoch: 2, Key: 3, FPLen: 4, FP: 5, Path: p})
		if err != nil {
			t.Fatal(err)
		}
		var m movedEntry
		if err := json.Unmarshal(b, &m); err != nil || m.Path != p || m.Epoch != 2 || m.FP != 5 {
			t.Errorf("moved entry %q → %s → %+v (%v)", p, b, m, err)
		}
	}
}
