package e2e

// Audit 9B of DESIGN §7 "Interfaces" (CLI, HTTP, feed.status, metrics),
// §3's pointer layout and §9's precise rules, against the built binary.
// TestAud9BX… are findings (they fail on the binary audited); TestAud9BOK…
// are passing probes kept as regressions for rules no other test covered.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// aud9BPullConfig is one feed read by a pull subscriber (token ctToken).
const aud9BPullConfig = `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 500
feeds:
  - {name: app, path: ./in.log, pollIntervalMillis: 20}
processors:
  - {name: p, feed: app, type: pull, ackTimeoutMillis: 60000}
`

// TestAud9BXAckFieldNamesCaseSensitive checks DESIGN §7 HTTP: "`POST
// /v1/ack` `{"deliveryId"}` → 200 `{"status":"acked"}` or 404,
// `{"deliveryIds":[…]}` → 200 …" and "malformed JSON, unknown fields, wrong
// types, trailing data → 400". A body whose only key is "DELIVERYID" (or
// "DeliveryId", "deliveryID") names no field of the contract: it is an
// unknown field, so 400, and it must not acknowledge anything. Observed:
// 200 {"status":"acked"} and the line counts as acknowledged (the feed
// settles, the pointer passes it); `{"DeliveryIds":[…]}` likewise is taken
// for deliveryIds, and /v1/nack the same. Suspected cause: the slow path
// of the settle handler decodes into settleBody (sink/pull/http.go:172-175)
// with encoding/json via status.DecodeJSON (status/server.go:428), whose
// DisallowUnknownFields still matches keys case-insensitively; the fast
// parser (parseSettle) rejects them and falls back to it. Fairly sure:
// JSON names are case-sensitive and the contract names the fields exactly;
// the harm is small (a misspelt key still acknowledges a line instead of
// being refused).
func TestAud9BXAckFieldNamesCaseSensitive(t *testing.T) {
	e := newEnv(t, aud9BPullConfig)
	os.WriteFile(e.path("in.log"), []byte("a1\na2\na3\n"), 0o644)
	d := e.start()
	evs := pullFromN(t, d, "p", 3, "")
	var bad []string
	for i, key := range []string{"DELIVERYID", "DeliveryId", "deliveryID"} {
		body := mustJSON(map[string]string{key: evs[i].DeliveryID})
		code, _, out := request(t, d, http.MethodPost, "/v1/ack", ctToken, body)
		if code != http.StatusBadRequest || !isErrorBody(out) {
			bad = append(bad, string(body)+" → "+http.StatusText(code)+" "+strings.TrimSpace(string(out)))
		}
	}
	code, _, out := request(t, d, http.MethodPost, "/v1/nack", ctToken, []byte(`{"DeliveryIds":["p:nope"]}`))
	if code != http.StatusBadRequest {
		bad = append(bad, `/v1/nack {"DeliveryIds":["p:nope"]} → `+http.StatusText(code)+" "+strings.TrimSpace(string(out)))
	}
	r, _ := statusRaw(t, d)
	if len(bad) > 0 {
		t.Errorf("bodies naming no field of the contract (keys differ from deliveryId/deliveryIds in case) were taken as ACKs, want 400 {\"error\"}:\n  %s\nfeed.status afterwards: acknowledged %d of sequence %d",
			strings.Join(bad, "\n  "), r.Feeds[0].Acknowledged, r.Feeds[0].Sequence)
	}
	d.stop()
}

// aud9BMetrics scrapes /metrics and returns the samples keyed by their
// series text (name{labels}).
func aud9BMetrics(t testing.TB, d *daemon) map[string]float64 {
	t.Helper()
	code, _, body := request(t, d, http.MethodGet, "/metrics", "", nil)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	out := map[string]float64{}
	for _, l := range strings.Split(string(body), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		var v float64
		if err := json.Unmarshal([]byte(l[i+1:]), &v); err != nil {
			continue
		}
		out[l[:i]] = v
	}
	return out
}

// aud9BFiles is GET /feed.status?files=1: each feed's files.
func aud9BFiles(t testing.TB, d *daemon) map[string][]struct {
	Path    string  `json:"path"`
	FileKey string  `json:"fileKey"`
	Epoch   *string `json:"epoch"`
	Offset  int64   `json:"offset"`
	Size    int64   `json:"size"`
	State   string  `json:"state"`
} {
	t.Helper()
	code, _, body := request(t, d, http.MethodGet, "/feed.status?files=1", "", nil)
	if code != http.StatusOK {
		t.Fatalf("/feed.status?files=1: %d %s", code, body)
	}
	var r struct {
		Feeds []struct {
			Feed  string `json:"feed"`
			Files []struct {
				Path    string  `json:"path"`
				FileKey string  `json:"fileKey"`
				Epoch   *string `json:"epoch"`
				Offset  int64   `json:"offset"`
				Size    int64   `json:"size"`
				State   string  `json:"state"`
			} `json:"files"`
		} `json:"feeds"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("/feed.status?files=1: %v: %s", err, body)
	}
	out := map[string][]struct {
		Path    string  `json:"path"`
		FileKey string  `json:"fileKey"`
		Epoch   *string `json:"epoch"`
		Offset  int64   `json:"offset"`
		Size    int64   `json:"size"`
		State   string  `json:"state"`
	}{}
	for _, f := range r.Feeds {
		out[f.Feed] = f.Files
	}
	return out
}

// TestAud9BOKGlobPointerBytes checks DESIGN §10 Streams ("pointer
// `dataDir/feeds/<feed>/<epoch, 16 hex>.ptr` (layout v1; the file key and
// fingerprint inside it identify the file)") against §3's table, from the
// bytes: each per-file pointer of a settled glob feed is 1,024 bytes, its
// newest slot valid (magic, layout 1, CRC-32C, zero padding), its epoch the
// one in its name and in ?files=1, its file key FNV-1a(dev, ino) of its
// file, its fingerprint FNV-1a of the first min(size, 4096) bytes, its
// offset the file's end; `pointer show --json` says the same.
func TestAud9BOKGlobPointerBytes(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status: {listen: "`+addrPlaceholder+`"}
shutdownTimeoutMillis: 500
feeds:
  - {name: g, path: "./in/*.log", pollIntervalMillis: 20}
processors:
  - {name: out, feed: g, type: file, path: ./out.log}
`)
	os.MkdirAll(e.path("in"), 0o755)
	small := e.path("in/a.log")
	big := e.path("in/b.log")
	os.WriteFile(small, []byte("a1\na2\n"), 0o644)
	var b bytes.Buffer
	for i := 0; b.Len() < 9000; i++ {
		b.WriteString(strings.Repeat("x", 50) + "\n")
	}
	os.WriteFile(big, b.Bytes(), 0o644)
	d := e.start()
	d.waitFor("both files read and settled", 30*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].Sequence == uint64(2+b.Len()/51)
	})
	files := aud9BFiles(t, d)["g"]
	if len(files) != 2 {
		t.Fatalf("?files=1 lists %d files, want 2", len(files))
	}
	for _, f := range files {
		if f.Epoch == nil {
			t.Fatalf("%s: epoch null after its lines were read", f.Path)
		}
		ptr := e.path("state/feeds/g/" + *f.Epoch + ".ptr")
		_, sa, sb := readSlots(t, ptr)
		n, letter, _ := newestSlot(t, sa, sb)
		st, _ := os.Stat(f.Path)
		wantLen := uint64(min(st.Size(), 4096))
		if got := fmt.Sprintf("%016x", n.epoch); got != *f.Epoch {
			t.Errorf("%s: slot %s epoch %s, file name and ?files=1 say %s", ptr, letter, got, *f.Epoch)
		}
		if n.key != fileKeyOf(t, f.Path) || fmt.Sprintf("%016x", n.key) != f.FileKey {
			t.Errorf("%s: file key %016x, want FNV-1a(dev, ino) %016x (?files=1 %s)", ptr, n.key, fileKeyOf(t, f.Path), f.FileKey)
		}
		if n.fpLen != wantLen || n.fp != fingerprintOf(t, f.Path, wantLen) {
			t.Errorf("%s: fingerprint length %d value %016x, want %d and %016x", ptr, n.fpLen, n.fp, wantLen, fingerprintOf(t, f.Path, wantLen))
		}
		if n.offset != st.Size() {
			t.Errorf("%s: offset %d, want the file's end %d (settled)", ptr, n.offset, st.Size())
		}
		rec, _ := showPointer(t, ptr)
		if rec.Epoch != *f.Epoch || rec.Offset != n.offset || rec.Slot != letter || rec.Commits != n.count || rec.FingerprintLength != int64(n.fpLen) {
			t.Errorf("pointer show --json %s: %+v; the bytes say slot %s epoch %s offset %d commits %d fpLen %d", ptr, rec, letter, *f.Epoch, n.offset, n.count, n.fpLen)
		}
	}
	d.stop()
}

// TestAud9BOKMetricsAgreeWithStatus checks DESIGN §7 "`GET /metrics`
// (Prometheus text)" and §12's metric names against feed.status read at a
// quiet moment: four feeds in four conditions (settled; stalled by a
// failing webhook; FAILED on a FIFO; a glob) give /metrics that `promtool
// check metrics` accepts, every per-feed value agreeing with the report
// (published = sequence, acknowledged, pending acks, settled, lossless,
// stalled, paused, commits, pointer offset, the state one-hot) and every
// subscriber's dispatched/queued/held with its row.
func TestAud9BOKMetricsAgreeWithStatus(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer hook.Close()
	e := newEnv(t, `dataDir: ./state
status: {listen: "`+addrPlaceholder+`", token: `+ctToken+`}
shutdownTimeoutMillis: 500
feeds:
  - {name: ok, path: ./ok.log, pollIntervalMillis: 20}
  - {name: st, path: ./st.log, pollIntervalMillis: 20}
  - {name: fi, path: ./fifo, pollIntervalMillis: 20}
  - {name: gl, path: "./g/*.log", pollIntervalMillis: 20}
processors:
  - {name: okf, feed: ok, type: file, path: ./ok.out}
  - {name: stf, feed: st, type: file, path: ./st.out}
  - {name: sth, feed: st, type: webhook, url: "`+hook.URL+`/x", retry: {initialMillis: 20, maxMillis: 40, attempts: 2}}
  - {name: fid, feed: fi, type: discard}
  - {name: glf, feed: gl, type: file, path: ./gl.out}
`)
	os.WriteFile(e.path("ok.log"), []byte("o1\no2\n"), 0o644)
	os.WriteFile(e.path("st.log"), []byte("s1\ns2\n"), 0o644)
	if err := syscall.Mkfifo(e.path("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(e.path("g"), 0o755)
	os.WriteFile(e.path("g/a.log"), []byte("g1\n"), 0o644)
	d := e.start()
	quiet := func(r *report) bool {
		return r.feed(t, "ok").Settled && r.feed(t, "st").Stalled != nil && r.feed(t, "fi").State == "FAILED" &&
			r.feed(t, "gl").Settled && r.feed(t, "st").Sequence == 2
	}
	var r *report
	var m map[string]float64
	var body []byte
	waitUntil(t, "a quiet moment where /metrics and feed.status agree to the version", 30*time.Second, func() bool {
		r1, _ := statusRaw(t, d)
		_, _, body = request(t, d, http.MethodGet, "/metrics", "", nil)
		m = aud9BMetrics(t, d)
		r2, _ := statusRaw(t, d)
		r = r2
		return quiet(r1) && quiet(r2) && r1.Version == r2.Version
	})
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	states := []string{"STARTING", "WAITING_FOR_FILE", "BEHIND", "CAUGHT_UP", "END_OF_STREAM", "FAILED"}
	for _, f := range r.Feeds {
		l := `{feed="` + f.Feed + `"}`
		want := map[string]float64{
			"tailfeed_feed_lines_published_total" + l:    float64(f.Sequence),
			"tailfeed_feed_lines_acknowledged_total" + l: float64(f.Acknowledged),
			"tailfeed_feed_pending_acks" + l:             float64(f.PendingAcks),
			"tailfeed_feed_settled" + l:                  b2f(f.Settled),
			"tailfeed_feed_lossless" + l:                 b2f(f.Lossless),
			"tailfeed_feed_stalled" + l:                  b2f(f.Stalled != nil),
			"tailfeed_feed_paused" + l:                   b2f(f.Paused),
			"tailfeed_feed_pauses_total" + l:             float64(f.Pauses),
			"tailfeed_feed_lines_dropped_total" + l:      float64(f.Dropped),
			"tailfeed_feed_lines_released_total" + l:     float64(f.Released),
		}
		if f.Pointer != nil {
			want["tailfeed_feed_commits_total"+l] = float64(f.Pointer.Commits)
			want["tailfeed_feed_commit_failures_total"+l] = float64(f.Pointer.CommitFailures)
			if f.Feed != "gl" {
				want["tailfeed_feed_pointer_offset_bytes"+l] = float64(f.Pointer.Offset)
			}
		}
		for _, st := range states {
			want[`tailfeed_feed_state{feed="`+f.Feed+`",state="`+st+`"}`] = b2f(f.State == st)
		}
		for _, s := range f.Subscribers {
			sl := `{feed="` + f.Feed + `",subscriber="` + s.Queue + `"}`
			want["tailfeed_subscriber_lines_dispatched_total"+sl] = float64(s.Dispatched)
			want["tailfeed_subscriber_lines_queued_total"+sl] = float64(s.Position)
			want["tailfeed_subscriber_held"+sl] = b2f(s.State == "FENCED" || s.State == "DEAD")
		}
		for k, v := range want {
			got, ok := m[k]
			if !ok {
				t.Errorf("/metrics has no %s (feed.status %s: %v)", k, f.Feed, v)
			} else if got != v {
				t.Errorf("/metrics %s = %v, feed.status says %v", k, got, v)
			}
		}
	}
	for _, res := range []string{"ok", "error"} {
		if _, ok := m[`tailfeed_reloads_total{result="`+res+`"}`]; !ok {
			t.Errorf("/metrics has no tailfeed_reloads_total{result=%q}", res)
		}
	}
	d.stop()
}

// aud9BLocked reports whether another process holds a flock on path
// (LOCK_EX|LOCK_NB from this process fails with EWOULDBLOCK).
func aud9BLocked(t testing.TB, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if err == syscall.EWOULDBLOCK {
			return true
		}
		t.Fatalf("flock %s: %v", path, err)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// TestAud9BOKPointerLocks checks DESIGN §3 Ownership ("The daemon holds
// `flock(LOCK_EX|LOCK_NB)` on `dataDir/LOCK` for its whole life and on
// each pointer file while it is open (a glob feed's per-file pointers:
// only while their file is open, §10)"), §10 ("mapped and flocked only
// while their file is open"; "a caught-up file unchanged for
// `closeInactiveMillis` … is closed") and §12 Reload ("A removed feed
// stops as at shutdown (… final commit, pointer closed and unlocked)"),
// from another process's flock: LOCK and both feeds' pointers are locked
// while they run, a glob file's pointer is locked while its file is open
// and free once closeInactiveMillis closed it, the removed feed's pointer
// is free after the reload while the kept feed's stays locked, and
// everything is free after the stop.
func TestAud9BOKPointerLocks(t *testing.T) {
	both := `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 500
feeds:
  - {name: gone, path: ./gone.log, pollIntervalMillis: 20}
  - {name: keep, path: ./keep.log, pollIntervalMillis: 20}
  - {name: g, path: "./g/*.log", pollIntervalMillis: 20, closeInactiveMillis: 1500}
processors:
  - {name: o1, feed: gone, type: discard}
  - {name: o2, feed: keep, type: discard}
  - {name: o3, feed: g, type: discard}
`
	e := newEnv(t, both)
	os.WriteFile(e.path("gone.log"), []byte("a\n"), 0o644)
	os.WriteFile(e.path("keep.log"), []byte("b\n"), 0o644)
	os.MkdirAll(e.path("g"), 0o755)
	os.WriteFile(e.path("g/1.log"), []byte("c\n"), 0o644)
	d := e.start()
	d.waitSettled(30 * time.Second)
	var gptr string
	if files := aud9BFiles(t, d)["g"]; len(files) == 1 && files[0].Epoch != nil && files[0].State == "CAUGHT_UP" {
		gptr = e.path("state/feeds/g/" + *files[0].Epoch + ".ptr")
	} else {
		t.Fatalf("glob file not open and caught up: %+v", files)
	}
	for _, p := range []string{"state/LOCK", "state/feeds/gone.ptr", "state/feeds/keep.ptr"} {
		if !aud9BLocked(t, e.path(p)) {
			t.Errorf("%s is not flocked while the daemon runs", p)
		}
	}
	if !aud9BLocked(t, gptr) {
		t.Errorf("%s (its file open, CAUGHT_UP) is not flocked", gptr)
	}
	waitUntil(t, "the glob file closed after closeInactiveMillis", 20*time.Second, func() bool {
		f := aud9BFiles(t, d)["g"]
		return len(f) == 1 && f[0].State == "CLOSED"
	})
	if aud9BLocked(t, gptr) {
		t.Errorf("%s still flocked after its file was closed (CLOSED)", gptr)
	}
	reconfig(t, e, d, strings.Replace(strings.Replace(both, "  - {name: gone, path: ./gone.log, pollIntervalMillis: 20}\n", "", 1),
		"  - {name: o1, feed: gone, type: discard}\n", "", 1))
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", ctToken, nil); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	if aud9BLocked(t, e.path("state/feeds/gone.ptr")) {
		t.Errorf("the removed feed's pointer is still flocked after the reload (\"pointer closed and unlocked\")")
	}
	if !aud9BLocked(t, e.path("state/feeds/keep.ptr")) || !aud9BLocked(t, e.path("state/LOCK")) {
		t.Errorf("the kept feed's pointer or LOCK lost its flock at the reload")
	}
	d.stop()
	for _, p := range []string{"state/LOCK", "state/feeds/keep.ptr", "state/feeds/gone.ptr"} {
		if aud9BLocked(t, e.path(p)) {
			t.Errorf("%s still flocked after the daemon exited", p)
		}
	}
}

// TestAud9BOKAckBodyEdges checks DESIGN §7 HTTP's body rules at their
// edges on /v1/ack and /v1/nack: "Bodies over 1 MiB → 413" (a body of
// exactly 1 MiB is not over it: answered; one byte more: 413), "an empty
// body where one is needed → 400", `{"deliveryIds":[]}` → 200 with
// `"unknown":[]` (a list, never null), a body naming neither field or both
// → 400, `null` → 400; each 4xx with an {"error"} body.
func TestAud9BOKAckBodyEdges(t *testing.T) {
	e := newEnv(t, aud9BPullConfig)
	os.WriteFile(e.path("in.log"), []byte("a1\n"), 0o644)
	d := e.start()
	pad := func(core string, n int) []byte {
		return append([]byte(core), bytes.Repeat([]byte(" "), n-len(core))...)
	}
	for _, path := range []string{"/v1/ack", "/v1/nack"} {
		verb := strings.TrimPrefix(path, "/v1/") + "ed"
		body := expectCode(t, d, http.MethodPost, path, ctToken, pad(`{"deliveryIds":["p:x"]}`, 1<<20), 200)
		var got map[string]any
		if json.Unmarshal(body, &got); got[verb] != float64(0) || fmt.Sprint(got["unknown"]) != "[p:x]" {
			t.Errorf("%s with a body of exactly 1 MiB: %s, want {%q:0,\"unknown\":[\"p:x\"]}", path, body, verb)
		}
		expectCode(t, d, http.MethodPost, path, ctToken, pad(`{"deliveryIds":["p:x"]}`, 1<<20+1), 413)
		body = expectCode(t, d, http.MethodPost, path, ctToken, []byte(`{"deliveryIds":[]}`), 200)
		if want := `{"` + verb + `":0,"unknown":[]}`; strings.TrimSpace(string(body)) != want {
			t.Errorf("%s {\"deliveryIds\":[]}: %s, want %s", path, body, want)
		}
		for _, b := range []string{`{}`, `null`, `{"deliveryId":"p:x","deliveryIds":["p:y"]}`, `{"deliveryId":""}`} {
			expectCode(t, d, http.MethodPost, path, ctToken, []byte(b), 400)
		}
	}
	d.stop()
}

// TestAud9BXCommitsResetByPathReload checks DESIGN §12 Reload: "Counters
// are never reset by a reload" (and "if its `path` changed, the old pointer
// is renamed to `feeds/<feed>.ptr.<epoch>.old` and the new path starts as
// a new feed under its readStrategy"), with §7's feed.status `pointer`
// `{"offset","epoch","commits","commitFailures"}` and the README's
// `tailfeed_feed_commits_total` (a Prometheus counter, "_total"). A
// COMMITTED feed commits 6 times on a.log; a reload points it at b.log.
// Observed: feed.status `pointer.commits` and `tailfeed_feed_commits_total`
// fall from 7 to 2 within the run (the new pointer file's own counter),
// while every other counter of the feed carries on (`sequence` 6 → 8,
// `tailfeed_feed_lines_published_total` likewise, `commitFailures`
// carried): a counter reset by a reload, which Prometheus reads as a
// process restart. The glob feed's summed `commits` was already made to
// survive reloads and forgotten files (TestAud4GOKReloadKeepsSkippedAndCommits).
// Suspected cause: the report and the metrics take `commits` straight from
// the open pointer's record (internal/daemon/report.go:111 and :229), and
// Feed.inherit carries commitFailures but no commit count across the
// restart (internal/daemon/reload.go:1400). Fairly sure of the rule
// ("never reset"); a judgement whether a path change makes "a new feed"
// whose counters may start over — but the binary itself carries sequence,
// lines read and the loss counters over the same change.
func TestAud9BXCommitsResetByPathReload(t *testing.T) {
	tmpl := `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 500
feeds:
  - {name: app, path: ./a.log, pollIntervalMillis: 20}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
`
	e := newEnv(t, tmpl)
	os.WriteFile(e.path("a.log"), []byte("a0\n"), 0o644)
	os.WriteFile(e.path("b.log"), []byte("b0\nb1\n"), 0o644)
	d := e.start()
	d.waitFor("a0 committed", 30*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Sequence == 1 })
	for i := 1; i <= 5; i++ {
		appendTo(t, e.path("a.log"), fmt.Sprintf("a%d\n", i))
		d.waitFor(fmt.Sprintf("a%d committed", i), 30*time.Second, func(r *report) bool {
			return r.Settled && r.Feeds[0].Sequence == uint64(i+1)
		})
	}
	before, _ := statusRaw(t, d)
	mBefore := aud9BMetrics(t, d)[`tailfeed_feed_commits_total{feed="app"}`]
	c0 := before.Feeds[0].Pointer.Commits
	reconfig(t, e, d, strings.Replace(tmpl, "./a.log", "./b.log", 1))
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", ctToken, nil); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	after := d.waitFor("b.log read and committed", 30*time.Second, func(r *report) bool {
		return r.Settled && strings.HasSuffix(r.Feeds[0].Path, "b.log") && r.Feeds[0].Pointer != nil && r.Feeds[0].Pointer.Offset == 6
	})
	mAfter := aud9BMetrics(t, d)[`tailfeed_feed_commits_total{feed="app"}`]
	f := after.Feeds[0]
	if f.Pointer.Commits < c0 || mAfter < mBefore {
		t.Errorf("after a reload that changed the feed's path: pointer.commits %d (was %d), tailfeed_feed_commits_total %v (was %v); "+
			"sequence %d (was %d). \"Counters are never reset by a reload\"", f.Pointer.Commits, c0, mAfter, mBefore, f.Sequence, before.Feeds[0].Sequence)
	}
	d.stop()
}

// TestAud9BXBestEffortPositionAfterReload checks DESIGN §7: "Subscriber
// `position`/`dispatched`: lines given to its queue / its ack point, this
// run (for a best-effort subscriber: the lines its group finished)", with
// §5 DROP_AFTER_SPIN ("drops at once until there is room (counted
// `dropped`, per line)") and §12 Reload ("Counters are never reset by a
// reload" — nor, by the same token, inflated). A DROP_AFTER_SPIN pull
// subscriber `tap` (queueCapacity 1, maxInFlight 1, no client) is given 3
// of 20 lines and 17 are dropped: feed.status says position 3, dispatched
// ≤ 3, dropped 17 — 3 + 17 = 20 published. A reload then changes only
// pollIntervalMillis (the feed restarts from its pointer at the end: no
// line is read again, none is new). Observed: `tap` reports position 20
// and dispatched 20 (as does tailfeed_subscriber_lines_queued_total /
// _lines_dispatched_total), while `dropped` says 20 of those lines never
// reached it: 20 given + 20 dropped of 20 published. Suspected cause: the
// carried numbering assumes every kept subscriber was given every sequence
// the earlier instance published — carried.before() is c.seq − base
// (internal/daemon/reload.go:1333-1335), added to position in addCarry
// (reload.go:1434) and the metrics (internal/daemon/report.go:238), and
// reportedDispatched adds it to dispatched (reload.go:1323-1328) — which
// is false for the lines a best-effort queue dropped, and for the lines a
// BLOCK_WITH_DEADLINE queue refused ("the batch is not given to that
// queue"): by hand, a BLOCK_WITH_DEADLINE pull subscriber (maxInFlight 1,
// no client) showed position 3, refused 17 of 20; after the same reload
// (all 20 re-read: it held the pointer at 0) position 23 though 6 lines
// had been given to it, and after one ACK dispatched 21. Sure of the
// observation; the rule is §7's definition (aud2_flow_test.go:300 holds
// "position + refused = published" without a reload).
func TestAud9BXBestEffortPositionAfterReload(t *testing.T) {
	tmpl := `dataDir: ./state
status: {listen: "` + addrPlaceholder + `", token: ` + ctToken + `}
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 20
    queueCapacity: 1
    overload: {spinBoundMillis: 1, subscribers: {tap: {policy: DROP_AFTER_SPIN}}}
processors:
  - {name: out, feed: app, type: file, path: ./out.log}
  - {name: tap, feed: app, type: pull, maxInFlight: 1}
`
	e := newEnv(t, tmpl)
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	os.WriteFile(e.path("in.log"), []byte(b.String()), 0o644)
	d := e.start()
	var last string
	r0 := d.waitFor("20 lines read, the tap's numbers steady", 30*time.Second, func(r *report) bool {
		f := r.Feeds[0]
		now := fmt.Sprint(f.sub(t, "tap"), f.Dropped)
		steady := now == last
		last = now
		return r.Settled && f.Sequence == 20 && f.sub(t, "out").Dispatched == 20 && f.Dropped > 0 && steady
	})
	f0 := r0.Feeds[0]
	tap0 := f0.sub(t, "tap")
	if tap0.Position+f0.Dropped != 20 {
		t.Fatalf("before the reload: tap position %d + dropped %d != 20 published (the premise)", tap0.Position, f0.Dropped)
	}
	reconfig(t, e, d, strings.Replace(tmpl, "pollIntervalMillis: 20", "pollIntervalMillis: 21", 1))
	if code, _, body := request(t, d, http.MethodPost, "/admin/reload", ctToken, nil); code != http.StatusOK {
		t.Fatalf("reload: %d %s", code, body)
	}
	time.Sleep(300 * time.Millisecond) // let the restarted feed look at its file (nothing new)
	r1 := d.waitSettled(30 * time.Second)
	f1 := r1.Feeds[0]
	tap1 := f1.sub(t, "tap")
	m := aud9BMetrics(t, d)
	if f1.Sequence != 20 {
		t.Fatalf("sequence %d after the reload, want 20 (nothing new; the premise)", f1.Sequence)
	}
	if tap1.Position > tap0.Position || tap1.Dispatched > tap0.Position {
		t.Errorf("after a reload that read nothing: tap position %d dispatched %d (metrics queued %v dispatched %v); before it: position %d dispatched %d, dropped %d of 20; now dropped %d — "+
			"position is \"lines given to its queue\", and %d of the 20 never reached it",
			tap1.Position, tap1.Dispatched, m[`tailfeed_subscriber_lines_queued_total{feed="app",subscriber="tap"}`],
			m[`tailfeed_subscriber_lines_dispatched_total{feed="app",subscriber="tap"}`], tap0.Position, tap0.Dispatched, f0.Dropped, f1.Dropped, f0.Dropped)
	}
	d.stop()
}
