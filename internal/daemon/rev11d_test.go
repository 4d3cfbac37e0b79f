package daemon

// Findings of the eleventh session's review 11d (DESIGN and the diff
// only), fixed the same session: each test failed on the reviewed commit
// (a stale earlier count state); its comment gives what was observed then.

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/status"
)

// TestRev11DBStaleOldCountStateTakenByTypeChange — DESIGN §12 "Reload": a
// changed processor whose target changed (a type change is one) has its
// durable state (count state among it) moved aside and "starts as new";
// §6 count: an earlier tailfeed's state/<processor>.json is moved to
// state/count/<processor>.json at the first start.
//
// Scenario: dataDir holds state/c.json, an earlier tailfeed's count state
// of processor c (c was a count processor then; it is a file sink in the
// config the upgraded daemon starts with, so no count open migrates it).
// A reload turns c into a count processor: targetChanged, moveStateAside
// looks only at the new path state/count/c.json (missing) and moves
// nothing, then the new count's open (moveOldState) renames the stale
// state/c.json into state/count/c.json.
//
// Expected: c starts as new — its counts are only what it counted since
// the reload (no key "stale"). Observed: GET /v1/state/c carries the
// stale counts (and stale applied positions) of the earlier incarnation.
func TestRev11DBStaleOldCountStateTakenByTypeChange(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "state", "state", "c.json")
	if err := os.MkdirAll(filepath.Dir(old), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	stale := `{"v":1,"processor":"c","type":"count","counts":{"stale":99},"feeds":{}}`
	if err := os.WriteFile(old, []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startIn(t, dir, reloadBase+"  - {name: c, feed: app, type: file, path: %DIR%/c.log}\n", Options{})
	e.appendLines(numbered("a", 0, 3)...)
	e.waitFor("settled", 10*time.Second, settled)
	e.reloadTo(reloadBase+"  - {name: c, feed: app, type: count}\n", "reload")
	e.appendLines(numbered("b", 0, 2)...)
	e.waitFor("settled", 10*time.Second, func(f status.FeedReport) bool { return f.Settled && f.Sequence >= 5 })
	var st struct {
		Counts map[string]uint64 `json:"counts"`
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := e.do(http.MethodGet, "/v1/state/c", "sesame")
		if code != http.StatusOK {
			t.Fatalf("GET /v1/state/c: %d %s", code, body)
		}
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
		if _, bad := st.Counts["stale"]; bad {
			t.Fatalf("c, a count since the reload (its target changed: starts as new), carries an earlier incarnation's counts %v (state/c.json migrated into state/count/c.json)", st.Counts)
		}
		var n uint64
		for _, v := range st.Counts {
			n += v
		}
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}
