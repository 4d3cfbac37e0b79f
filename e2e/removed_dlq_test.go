package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// TestRemovedProcessorDeadLettersAdmin: the dead letters of a processor a
// reload removed still count for their feed (deadLettered 1, lossless
// false: DESIGN §6) and stay reachable by the admin API under the
// processor's name: GET lists them, a replay answers 409 (nothing to replay
// into), DELETE purges them — counted in released (losses.jsonl) as any
// purge — after which deadLettered is 0 and, once the operator acknowledged
// the losses, the feed is lossless again; a restart keeps it so.
func TestRemovedProcessorDeadLettersAdmin(t *testing.T) {
	e, base := removedHookEnv(t)
	os.WriteFile(e.path("in.log"), []byte("a1\n"), 0o644)
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].DeadLettered == 1
	})
	auditOpsReload(t, e, d, ctToken, base)
	r := d.waitSettled(30 * time.Second)
	if f := r.Feeds[0]; f.DeadLettered != 1 || f.Lossless {
		t.Fatalf("after the reload that removed hook: deadLettered %d, lossless %v; want 1, false", f.DeadLettered, f.Lossless)
	}

	code, _, body := request(t, d, http.MethodGet, "/admin/dlq/hook", ctToken, nil)
	var list struct {
		Total   int `json:"total"`
		Entries []struct {
			Line string `json:"line"`
		} `json:"entries"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &list) != nil || list.Total != 1 || len(list.Entries) != 1 || list.Entries[0].Line != "a1" {
		t.Fatalf("GET /admin/dlq/hook of the removed processor: %d %s; want 200 with the entry a1", code, body)
	}
	if code, _, body := request(t, d, http.MethodPost, "/admin/dlq/hook/replay", ctToken, nil); code != http.StatusConflict {
		t.Errorf("POST /admin/dlq/hook/replay of the removed processor: %d %s; want 409", code, body)
	}
	code, _, body = request(t, d, http.MethodDelete, "/admin/dlq/hook", ctToken, nil)
	var purge struct {
		Purged    int `json:"purged"`
		Remaining int `json:"remaining"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &purge) != nil || purge.Purged != 1 || purge.Remaining != 0 {
		t.Fatalf("DELETE /admin/dlq/hook of the removed processor: %d %s; want 200 purged 1 remaining 0", code, body)
	}
	r, _ = statusRaw(t, d)
	if f := r.Feeds[0]; f.DeadLettered != 0 || f.Released != 1 || f.Lossless {
		t.Errorf("after the purge: deadLettered %d, released %d, lossless %v; want 0, 1, false", f.DeadLettered, f.Released, f.Lossless)
	}
	if code, _, body := request(t, d, http.MethodGet, "/admin/dlq/hook", ctToken, nil); code != http.StatusNotFound {
		t.Errorf("GET /admin/dlq/hook once its ledger is empty: %d %s; want 404 (no such processor)", code, body)
	}
	if code, _, body := request(t, d, http.MethodDelete, "/admin/losses/app", ctToken, nil); code != http.StatusOK {
		t.Fatalf("DELETE /admin/losses/app: %d %s", code, body)
	}
	r, _ = statusRaw(t, d)
	if f := r.Feeds[0]; f.Released != 0 || !f.Lossless {
		t.Errorf("after the losses were acknowledged: released %d, lossless %v; want 0, true", f.Released, f.Lossless)
	}
	d.stop()
	e.tmpl = base
	d = e.start()
	r = d.waitSettled(30 * time.Second)
	if f := r.Feeds[0]; f.DeadLettered != 0 || !f.Lossless {
		t.Errorf("after a restart: deadLettered %d, lossless %v; want 0, true", f.DeadLettered, f.Lossless)
	}
}

// TestRemovedProcessorPurgeRewriteFailsCountedOnce: a purge of a removed
// processor's dead letters counts its loss (losses.jsonl) before the
// entries leave the dead-letter ledger; when that ledger's rewrite then
// fails (here a directory stands where its temporary file goes; one of two
// entries purged, so the ledger is rewritten, not removed), nothing
// is purged and the count is taken back, so the purge retried once the
// rewrite works counts the line once: released 1, losses.jsonl released 1
// (DESIGN §6 "Purged entries count in released").
func TestRemovedProcessorPurgeRewriteFailsCountedOnce(t *testing.T) {
	e, base := removedHookEnv(t)
	os.WriteFile(e.path("in.log"), []byte("a1\n"), 0o644)
	d := e.start()
	d.waitFor("one dead letter", 30*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].DeadLettered == 1
	})
	appendTo(t, e.path("in.log"), "a2\n") // a request of its own
	d.waitFor("two dead letters", 30*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].DeadLettered == 2
	})
	auditOpsReload(t, e, d, ctToken, base)
	d.waitSettled(30 * time.Second)
	tmp := e.path("state/dlq/hook.jsonl.tmp")
	if err := os.MkdirAll(tmp+"/x", 0o700); err != nil {
		t.Fatal(err)
	}
	code, _, body := request(t, d, http.MethodDelete, "/admin/dlq/hook?max=1", ctToken, nil)
	if code == http.StatusOK {
		t.Fatalf("DELETE /admin/dlq/hook while its ledger cannot be rewritten: 200 %s", body)
	}
	r, _ := statusRaw(t, d)
	t.Logf("refused purge: %d %s; released %d deadLettered %d", code, body, r.Feeds[0].Released, r.Feeds[0].DeadLettered)
	if err := os.RemoveAll(tmp); err != nil {
		t.Fatal(err)
	}
	if code, _, body := request(t, d, http.MethodDelete, "/admin/dlq/hook?max=1", ctToken, nil); code != http.StatusOK {
		t.Fatalf("DELETE /admin/dlq/hook with the rewrite working: %d %s", code, body)
	}
	r, _ = statusRaw(t, d)
	if f, n := r.Feeds[0], ledgerSum(t, e.path("state/losses.jsonl"), "app", "released"); f.DeadLettered != 1 || f.Released != 1 || n != 1 {
		t.Errorf("one of two dead letters purged after a refused try: deadLettered %d, released %d, losses.jsonl released %d; want 1, 1, 1", f.DeadLettered, f.Released, n)
	}
	d.stop()
}

// removedHookEnv is an env whose config (feed app on ./in.log, a file sink
// out) adds a webhook processor hook that refuses every request and
// dead-letters it; base is the config without hook (the reload that
// removes it).
func removedHookEnv(t *testing.T) (e *env, base string) {
	t.Helper()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "refused", http.StatusBadRequest)
	}))
	t.Cleanup(hook.Close)
	base = `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 500
feeds:
  - {name: app, path: ./in.log, pollIntervalMillis: 20}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
`
	return newEnv(t, base+"  - {name: hook, feed: app, type: webhook, url: \""+hook.URL+"\", onFailure: deadLetter}\n"), base
}
