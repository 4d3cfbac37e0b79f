package datadir

import "testing"

// TestLayout pins the on-disk names: changing one orphans an existing
// dataDir's pointers, ledgers and records.
func TestLayout(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{LockPath("/d"), "/d/LOCK"},
		{WriteProbePath("/d"), "/d/.write-test"},
		{LossesPath("/d"), "/d/losses.jsonl"},
		{Pointer("/d", "app"), "/d/feeds/app.ptr"},
		{Epochs("/d", "app"), "/d/feeds/app.epochs"},
		{DeadLetters("/d", "p"), "/d/dlq/p.jsonl"},
		{Record("/d", "p"), "/d/state/p.rec"},
		{CountState("/d", "p"), "/d/state/count/p.json"}, {CountStateOld("/d", "p"), "/d/state/p.json"}, {CountStateOld("/d", "removed"), ""},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}

func TestOwns(t *testing.T) {
	for path, want := range map[string]bool{
		"/d": true, "/d/LOCK": true, "/d/losses.jsonl": true, "/d/feeds": true, "/d/feeds/a.ptr": true,
		"/d/dlq/p.jsonl": true, "/d/state/x": true, "/d/out.log": false, "/d/feedsx": false, "/e/LOCK": false,
	} {
		if got := Owns("/d", path); got != want {
			t.Errorf("Owns(/d, %s) = %v, want %v", path, got, want)
		}
	}
	for _, n := range []string{"LOCK", ".write-test", "losses.jsonl", "losses.jsonl.tmp", "feeds", "dlq", "state"} {
		if !Top(n) {
			t.Errorf("Top(%s) = false", n)
		}
	}
	if Top("other") {
		t.Error("Top(other) = true")
	}
}
