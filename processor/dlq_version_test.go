package processor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLedgerVersion: new entries carry "v":1; a ledger written before the
// field existed still opens (its entries read as version 1 and replay); one
// holding an entry of a newer format is refused with an error naming the
// file and the line, and is left as it was.
func TestLedgerVersion(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.jsonl")
	l, err := OpenLedger(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.DeadLetter(ledgerDelivery("new", 9, 10), 6, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), `{"v":1,`) {
		t.Fatalf("new entry %s does not start with \"v\":1", data)
	}

	old := filepath.Join(dir, "old.jsonl")
	unversioned := `{"feed":"app","path":"/in.log","epoch":"00000000000000e1","position":3,"positioned":true,"attempts":6,"error":"x","time":"2026-01-02T15:04:05Z","line":"p","lineBase64":"cA=="}` + "\n"
	if err := os.WriteFile(old, []byte(unversioned), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err = OpenLedger(old, nil)
	if err != nil {
		t.Fatalf("ledger without versions: %v", err)
	}
	if items := l.head(10); len(items) != 1 || string(items[0].line) != "p" {
		t.Fatalf("unversioned entry not replayable: %+v", items)
	}

	future := filepath.Join(dir, "future.jsonl")
	body := unversioned + `{"v":2,"feed":"app","somethingNew":true}` + "\n"
	if err := os.WriteFile(future, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = OpenLedger(future, nil)
	if !errors.Is(err, ErrLedgerVersion) || !strings.Contains(err.Error(), future+" line 2: version 2") {
		t.Fatalf("ledger with a version 2 entry: %v, want ErrLedgerVersion naming %s line 2", err, future)
	}
	if after, _ := os.ReadFile(future); string(after) != body {
		t.Fatalf("refused ledger changed: %q", after)
	}
}
