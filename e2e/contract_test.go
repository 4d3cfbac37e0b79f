package e2e

// Contract conformance: DESIGN §3, §4, §7 and §9 read sentence by sentence
// and checked from outside, against the built binary only (its CLI, its
// files, its HTTP API), as a reader of DESIGN.md who has seen no code.
// Where DESIGN leaves a shape open (a DLQ listing, a replay answer) the
// tests look only for what DESIGN promises to be in it.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ctToken is the status token of the contract configs.
const ctToken = "ct-secret"

var ctHex16 = regexp.MustCompile(`^[0-9a-f]{16}$`)

// ---------------------------------------------------------------------------
// Helpers: HTTP, a daemon with its own working directory and environment,
// the full feed.status of §7, and a sampler that checks every report.

// ctDo sends one request to d; token "" sends no Authorization header.
func ctDo(t testing.TB, d *daemon, method, path, token string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+d.addr+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 40 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// ctJSON marshals v (test input, never fails).
func ctJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// ctIsError reports whether body is {"error":"…"} with a non-empty message.
func ctIsError(body []byte) bool {
	var e map[string]any
	if json.Unmarshal(body, &e) != nil {
		return false
	}
	s, ok := e["error"].(string)
	return ok && s != ""
}

// ctExpect sends a request and requires the status code and, for a 4xx, an
// {"error":"…"} body.
func ctExpect(t *testing.T, d *daemon, method, path, token string, body []byte, want int) []byte {
	t.Helper()
	code, _, out := ctDo(t, d, method, path, token, body)
	if code != want {
		t.Errorf("%s %s (token %q, %d body bytes): %d %.200s, want %d", method, path, token, len(body), code, out, want)
	} else if code >= 400 && code < 500 && !ctIsError(out) {
		t.Errorf("%s %s: %d body %.200q, want {\"error\":\"…\"}", method, path, code, out)
	}
	return out
}

// ctStart starts a daemon on e's config with the process's working
// directory at dir (not the config's) and extra environment variables.
func ctStart(e *env, dir string, extraEnv ...string) *daemon {
	e.t.Helper()
	for attempt := 0; ; attempt++ {
		d := e.spawnIn(dir, extraEnv...)
		// Ready once /healthz answers (always open, unlike /feed.status).
		deadline := time.Now().Add(60 * time.Second)
		err := errors.New("not ready in time")
		for time.Now().Before(deadline) && !d.exited() {
			if code, _, gerr := d.get("/healthz"); gerr == nil && code != 0 {
				return d
			}
			time.Sleep(10 * time.Millisecond)
		}
		if d.exited() {
			err = fmt.Errorf("exited with code %d before it was ready", d.code)
		}
		if d.exited() && strings.Contains(d.log(), "address already in use") && attempt < 5 {
			continue
		}
		e.t.Fatalf("daemon did not become ready: %v\n%s", err, tail(d.log(), 4000))
	}
}

// ctReport is feed.status with every field of DESIGN §7.
type ctReport struct {
	Settled  bool     `json:"settled"`
	Lossless bool     `json:"lossless"`
	Version  uint64   `json:"version"`
	Feeds    []ctFeed `json:"feeds"`
}

type ctFeed struct {
	Feed               string     `json:"feed"`
	Path               string     `json:"path"`
	State              string     `json:"state"`
	Bounded            bool       `json:"bounded"`
	Sequence           uint64     `json:"sequence"`
	Detail             *string    `json:"detail"`
	Drained            bool       `json:"drained"`
	Settled            bool       `json:"settled"`
	Lossless           bool       `json:"lossless"`
	Policy             string     `json:"policy"`
	Dropped            uint64     `json:"dropped"`
	Refused            uint64     `json:"refused"`
	Downgraded         uint64     `json:"downgraded"`
	CompletionFailures uint64     `json:"completionFailures"`
	Released           uint64     `json:"released"`
	DeadLettered       uint64     `json:"deadLettered"`
	Oversized          uint64     `json:"oversized"`
	Unterminated       int64      `json:"unterminated"`
	LostTails          uint64     `json:"lostTails"`
	Paused             bool       `json:"paused"`
	Pauses             uint64     `json:"pauses"`
	Acknowledged       uint64     `json:"acknowledged"`
	PendingAcks        int64      `json:"pendingAcks"`
	Consumers          int        `json:"consumers"`
	Stalled            *string    `json:"stalled"`
	Epoch              string     `json:"epoch"`
	Pointer            *ctPointer `json:"pointer"`
	Subscribers        []ctSub    `json:"subscribers"`
}

type ctPointer struct {
	Offset         int64  `json:"offset"`
	Epoch          string `json:"epoch"`
	Commits        uint64 `json:"commits"`
	CommitFailures uint64 `json:"commitFailures"`
}

type ctSub struct {
	Queue      string `json:"queue"`
	Position   uint64 `json:"position"`
	Dispatched uint64 `json:"dispatched"`
	Drained    bool   `json:"drained"`
	State      string `json:"state"`
}

func (r *ctReport) feed(t testing.TB, name string) ctFeed {
	t.Helper()
	for _, f := range r.Feeds {
		if f.Feed == name {
			return f
		}
	}
	t.Fatalf("feed.status has no feed %q", name)
	return ctFeed{}
}

func (f ctFeed) sub(t testing.TB, name string) ctSub {
	t.Helper()
	for _, s := range f.Subscribers {
		if s.Queue == name {
			return s
		}
	}
	t.Fatalf("feed %s has no subscriber %q", f.Feed, name)
	return ctSub{}
}

// ctStatus reads /feed.status raw and decoded.
func ctStatus(t testing.TB, d *daemon) (*ctReport, []byte) {
	t.Helper()
	code, body, err := d.get("/feed.status")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/feed.status: %d %s %v", code, body, err)
	}
	var r ctReport
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("/feed.status: %v: %s", err, body)
	}
	return &r, body
}

// ctWait polls /feed.status until ok holds.
func ctWait(t testing.TB, d *daemon, what string, ok func(*ctReport) bool) *ctReport {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last []byte
	for time.Now().Before(deadline) {
		if d.exited() {
			t.Fatalf("waiting for %s: the daemon exited with code %d\n%s", what, d.code, tail(d.log(), 3000))
		}
		r, raw := ctStatus(t, d)
		if ok(r) {
			return r
		}
		last = raw
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s within 30s; last report %s", what, last)
	return nil
}

// fieldKinds is every field of a feed in feed.status and its JSON kind.
var ctFeedKinds = map[string]string{
	"feed": "string", "path": "string", "state": "state", "bounded": "bool", "sequence": "uint",
	"detail": "string|null", "drained": "bool", "settled": "bool", "lossless": "bool", "policy": "policy",
	"dropped": "uint", "refused": "uint", "downgraded": "uint", "completionFailures": "uint",
	"released": "uint", "deadLettered": "uint", "oversized": "uint", "unterminated": "uint",
	"lostTails": "uint", "lostBytes": "uint", "paused": "bool", "pauses": "uint", "acknowledged": "uint",
	"pendingAcks": "uint", "consumers": "uint", "stalled": "string|null", "epoch": "epoch",
	"pointer": "pointer", "subscribers": "subscribers",
}

var ctPointerKinds = map[string]string{"offset": "uint", "epoch": "hex", "commits": "uint", "commitFailures": "uint"}

var ctSubKinds = map[string]string{"queue": "string", "position": "uint", "dispatched": "uint", "drained": "bool", "state": "substate"}

var ctStates = map[string]bool{"STARTING": true, "WAITING_FOR_FILE": true, "BEHIND": true, "CAUGHT_UP": true, "END_OF_STREAM": true, "FAILED": true}

// ctKind checks v against kind and returns a problem or "".
func ctKind(kind string, v any, present bool) string {
	if !present {
		return "missing"
	}
	switch kind {
	case "string":
		if _, ok := v.(string); !ok {
			return fmt.Sprintf("%v is not a string", v)
		}
	case "string|null":
		if _, ok := v.(string); !ok && v != nil {
			return fmt.Sprintf("%v is neither a string nor null", v)
		}
	case "bool":
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("%v is not a boolean", v)
		}
	case "uint":
		n, ok := v.(float64)
		if !ok || n < 0 || n != float64(int64(n)) {
			return fmt.Sprintf("%v is not a non-negative integer", v)
		}
	case "state":
		if s, _ := v.(string); !ctStates[s] {
			return fmt.Sprintf("%v is not one of the six states", v)
		}
	case "policy":
		if s, _ := v.(string); s != "PAUSE" && s != "DROP_AFTER_SPIN" && s != "BLOCK_WITH_DEADLINE" {
			return fmt.Sprintf("%v is not a policy", v)
		}
	case "substate":
		if s, _ := v.(string); s == "" {
			return fmt.Sprintf("%v is not a state", v)
		}
	case "hex":
		if s, _ := v.(string); !ctHex16.MatchString(s) {
			return fmt.Sprintf("%v is not 16 lowercase hex digits", v)
		}
	case "epoch":
		if v == nil {
			return ""
		}
		if s, _ := v.(string); s != "" && !ctHex16.MatchString(s) {
			return fmt.Sprintf("%v is not 16 lowercase hex digits", v)
		}
	case "pointer":
		if v == nil {
			return ""
		}
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Sprintf("%v is neither an object nor null", v)
		}
		for k, kk := range ctPointerKinds {
			x, ok := m[k]
			if p := ctKind(kk, x, ok); p != "" {
				return "." + k + ": " + p
			}
		}
	case "subscribers":
		subs, ok := v.([]any)
		if !ok {
			return fmt.Sprintf("%v is not an array", v)
		}
		for i, s := range subs {
			m, ok := s.(map[string]any)
			if !ok {
				return fmt.Sprintf("[%d] is not an object", i)
			}
			for k, kk := range ctSubKinds {
				x, ok := m[k]
				if p := ctKind(kk, x, ok); p != "" {
					return fmt.Sprintf("[%d].%s: %s", i, k, p)
				}
			}
		}
	}
	return ""
}

// ctCheckReport checks one feed.status body against §7: every field with
// its type, and the rules that hold within one report. bestEffort names
// subscribers that do not hold the pointer.
func ctCheckReport(raw []byte, bestEffort map[string]bool) []string {
	var probs []string
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	for k, kind := range map[string]string{"settled": "bool", "lossless": "bool", "version": "uint"} {
		x, ok := top[k]
		if p := ctKind(kind, x, ok); p != "" {
			probs = append(probs, k+": "+p)
		}
	}
	feeds, ok := top["feeds"].([]any)
	if !ok {
		return append(probs, "feeds is not an array")
	}
	for i, f := range feeds {
		m, ok := f.(map[string]any)
		if !ok {
			probs = append(probs, fmt.Sprintf("feeds[%d] is not an object", i))
			continue
		}
		for k, kind := range ctFeedKinds {
			x, ok := m[k]
			if p := ctKind(kind, x, ok); p != "" {
				probs = append(probs, fmt.Sprintf("feeds[%d].%s: %s", i, k, p))
			}
		}
	}
	if len(probs) > 0 {
		return probs
	}
	var r ctReport
	if err := json.Unmarshal(raw, &r); err != nil {
		return []string{err.Error()}
	}
	allSettled, allLossless := true, true
	for _, f := range r.Feeds {
		allSettled = allSettled && f.Settled
		allLossless = allLossless && f.Lossless
		bad := func(format string, args ...any) {
			probs = append(probs, fmt.Sprintf("feed %s: ", f.Feed)+fmt.Sprintf(format, args...))
		}
		// Counters of this run force lossless false; lossless false with
		// zero counters is a loss of an earlier run still in the losses
		// ledger (DESIGN §7 "Losses outlive the run").
		lossy := f.Dropped+f.Refused+f.CompletionFailures+f.Released+f.LostTails+f.DeadLettered > 0
		if f.Lossless && lossy {
			bad("lossless %v with dropped %d refused %d completionFailures %d released %d lostTails %d deadLettered %d",
				f.Lossless, f.Dropped, f.Refused, f.CompletionFailures, f.Released, f.LostTails, f.DeadLettered)
		}
		if f.Acknowledged > f.Sequence {
			bad("acknowledged %d > sequence %d", f.Acknowledged, f.Sequence)
		}
		if f.Epoch == "" && f.State != "WAITING_FOR_FILE" && f.State != "STARTING" {
			bad("no epoch in state %s", f.State)
		}
		if f.State == "END_OF_STREAM" && !f.Bounded {
			bad("END_OF_STREAM but not bounded")
		}
		live := 0
		for _, s := range f.Subscribers {
			if s.State == "LIVE" {
				live++
			}
			if s.Dispatched > s.Position {
				bad("subscriber %s dispatched %d > position %d", s.Queue, s.Dispatched, s.Position)
			}
			if f.Settled && !bestEffort[s.Queue] && !s.Drained {
				bad("settled while pointer-holding subscriber %s is not drained", s.Queue)
			}
		}
		if f.Consumers != live {
			bad("consumers %d, but %d subscribers are LIVE", f.Consumers, live)
		}
		if f.Settled {
			if f.State != "CAUGHT_UP" && f.State != "WAITING_FOR_FILE" && f.State != "END_OF_STREAM" {
				bad("settled in state %s", f.State)
			}
			if f.PendingAcks != 0 || f.Stalled != nil || f.Acknowledged != f.Sequence {
				bad("settled with pendingAcks %d, stalled %v, acknowledged %d of %d", f.PendingAcks, f.Stalled, f.Acknowledged, f.Sequence)
			}
		}
	}
	if r.Settled != allSettled || r.Lossless != allLossless {
		probs = append(probs, fmt.Sprintf("top level settled %v lossless %v, feeds say %v %v", r.Settled, r.Lossless, allSettled, allLossless))
	}
	return probs
}

// ctSampler polls /feed.status of one run in the background and checks
// every report (ctCheckReport) and the version rule between consecutive
// reports: it never goes back and increases whenever another field changed.
type ctSampler struct {
	t          *testing.T
	d          *daemon
	bestEffort map[string]bool
	stop, done chan struct{}

	once    sync.Once
	mu      sync.Mutex
	probs   []string
	n       int
	changes int
}

// ctSample starts a sampler; finish reports what it found, and the test's
// cleanup stops it in any case.
func ctSample(t *testing.T, d *daemon, bestEffort ...string) *ctSampler {
	s := &ctSampler{t: t, d: d, bestEffort: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, q := range bestEffort {
		s.bestEffort[q] = true
	}
	go s.run()
	t.Cleanup(s.halt)
	return s
}

// halt stops the sampling (idempotent).
func (s *ctSampler) halt() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

func (s *ctSampler) run() {
	defer close(s.done)
	var lastVer uint64
	var lastRest string
	for {
		select {
		case <-s.stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
		code, raw, err := s.d.get("/feed.status")
		if err != nil || code != http.StatusOK {
			continue // stopping
		}
		probs := ctCheckReport(raw, s.bestEffort)
		var m map[string]any
		json.Unmarshal(raw, &m)
		ver, _ := m["version"].(float64)
		delete(m, "version")
		rest := string(ctJSON(m))
		s.mu.Lock()
		if s.n > 0 {
			switch {
			case uint64(ver) < lastVer:
				probs = append(probs, fmt.Sprintf("version went back from %d to %d", lastVer, uint64(ver)))
			case rest != lastRest && uint64(ver) == lastVer:
				probs = append(probs, fmt.Sprintf("version %d unchanged although the report changed:\n  %s\n  %s", lastVer, lastRest, rest))
			}
			if rest != lastRest {
				s.changes++
			}
		}
		s.n++
		lastVer, lastRest = uint64(ver), rest
		for _, p := range probs {
			if len(s.probs) < 20 {
				s.probs = append(s.probs, p+"\n  in "+string(raw))
			}
		}
		s.mu.Unlock()
	}
}

// finish stops the sampler and fails the test with what it found.
func (s *ctSampler) finish() {
	s.t.Helper()
	s.halt()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.probs {
		s.t.Errorf("feed.status sample: %s", p)
	}
	s.t.Logf("sampler: %d reports, %d changes", s.n, s.changes)
}

// ctEvent is one pull event with every field of §9 (lineBase64 optional).
type ctEvent struct {
	DeliveryID string  `json:"deliveryId"`
	Feed       string  `json:"feed"`
	Epoch      string  `json:"epoch"`
	Position   int64   `json:"position"`
	Sequence   uint64  `json:"sequence"`
	Attempt    int     `json:"attempt"`
	Path       string  `json:"path"`
	Line       string  `json:"line"`
	LineBase64 *string `json:"lineBase64"`
}

// ctPull does one GET /v1/pull/{sub}?query and checks the body's shape.
func ctPull(t testing.TB, d *daemon, sub, query string) []ctEvent {
	t.Helper()
	code, _, body := ctDo(t, d, http.MethodGet, "/v1/pull/"+sub+"?"+query, ctToken, nil)
	if code != http.StatusOK {
		t.Fatalf("pull %s?%s: %d %s", sub, query, code, body)
	}
	var r struct {
		Events []ctEvent `json:"events"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || r.Events == nil {
		t.Fatalf("pull body %.300q: %v (want {\"events\":[…]}, an empty list when none)", body, err)
	}
	// Every field of §9 is present in every event.
	var rawEvs struct {
		Events []map[string]json.RawMessage `json:"events"`
	}
	json.Unmarshal(body, &rawEvs)
	for _, ev := range rawEvs.Events {
		for _, k := range []string{"deliveryId", "feed", "epoch", "position", "sequence", "attempt", "path", "line"} {
			if _, ok := ev[k]; !ok {
				t.Fatalf("pull event without %q: %s", k, body)
			}
		}
	}
	return r.Events
}

// ctPullN pulls until n events came (query without max).
func ctPullN(t testing.TB, d *daemon, sub string, n int, query string) []ctEvent {
	t.Helper()
	var evs []ctEvent
	deadline := time.Now().Add(30 * time.Second)
	for len(evs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("pulled %d events, want %d", len(evs), n)
		}
		q := fmt.Sprintf("max=%d&wait=500ms", n-len(evs))
		if query != "" {
			q += "&" + query
		}
		evs = append(evs, ctPull(t, d, sub, q)...)
	}
	return evs
}

// ctAckAll acknowledges evs with one batch ACK; every id must be known.
func ctAckAll(t testing.TB, d *daemon, evs []ctEvent) {
	t.Helper()
	if len(evs) == 0 {
		return
	}
	ids := make([]string, len(evs))
	for i, ev := range evs {
		ids[i] = ev.DeliveryID
	}
	code, _, body := ctDo(t, d, http.MethodPost, "/v1/ack", ctToken, ctJSON(map[string]any{"deliveryIds": ids}))
	var r struct {
		Acked   int      `json:"acked"`
		Unknown []string `json:"unknown"`
	}
	if err := json.Unmarshal(body, &r); code != http.StatusOK || err != nil || r.Acked != len(ids) || r.Unknown == nil || len(r.Unknown) != 0 {
		t.Fatalf("batch ACK of %d ids: %d %s, want 200 {\"acked\":%d,\"unknown\":[]}", len(ids), code, body, len(ids))
	}
}

// ctAppend appends s to path with one write.
func ctAppend(t testing.TB, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// §3 Pointer file.

// ctSlot is one decoded 64-byte slot of a pointer file.
type ctSlot struct {
	why                          string // why it is not valid; "" when it is
	offset                       int64
	epoch, key, fpLen, fp, count uint64
}

var ctCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// ctDecodeSlot decodes the slot at the start of half (512 bytes) by the
// table of §3 and checks the zero bytes after it.
func ctDecodeSlot(half []byte) ctSlot {
	b := half[:64]
	le := binary.LittleEndian
	s := ctSlot{offset: int64(le.Uint64(b[8:])), epoch: le.Uint64(b[16:]), key: le.Uint64(b[24:]),
		fpLen: le.Uint64(b[32:]), fp: le.Uint64(b[40:]), count: le.Uint64(b[48:])}
	switch {
	case string(b[:5]) != "TFPTR":
		s.why = fmt.Sprintf("magic %q", b[:5])
	case b[5] != 0:
		s.why = "byte 5 not zero"
	case le.Uint16(b[6:]) != 1:
		s.why = fmt.Sprintf("layout %d", le.Uint16(b[6:]))
	case crc32.Checksum(b[:56], ctCastagnoli) != le.Uint32(b[56:]):
		s.why = "CRC-32C mismatch"
	case !bytes.Equal(half[60:], make([]byte, len(half)-60)):
		s.why = "bytes 60..511 of the half are not zero"
	}
	return s
}

// ctReadPointer reads the raw pointer file and its two slots.
func ctReadPointer(t testing.TB, path string) (data []byte, a, b ctSlot) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 1024 {
		t.Fatalf("pointer file is %d bytes, want exactly 1,024", len(data))
	}
	return data, ctDecodeSlot(data[:512]), ctDecodeSlot(data[512:])
}

// ctNewest returns the valid slot with the higher commit counter and its
// letter.
func ctNewest(t testing.TB, a, b ctSlot) (ctSlot, string, ctSlot) {
	t.Helper()
	switch {
	case a.why != "" && b.why != "":
		t.Fatalf("no valid slot: A %s, B %s", a.why, b.why)
	case b.why != "" || (a.why == "" && a.count > b.count):
		return a, "A", b
	}
	return b, "B", a
}

// ctFileKey is FNV-1a 64 over the device then the inode, each 8
// little-endian bytes (§3), from os.Stat.
func ctFileKey(t testing.TB, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(sys.Dev))
	binary.LittleEndian.PutUint64(b[8:], uint64(sys.Ino))
	h := fnv.New64a()
	h.Write(b[:])
	return h.Sum64()
}

// ctFingerprint is FNV-1a 64 of the first n bytes of path.
func ctFingerprint(t testing.TB, path string, n uint64) uint64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(data)) < n {
		t.Fatalf("%s has %d bytes, fingerprint covers %d", path, len(data), n)
	}
	h := fnv.New64a()
	h.Write(data[:n])
	return h.Sum64()
}

// ctShow runs `pointer show` (text) and returns its key: value pairs.
func ctShow(t testing.TB, path string) map[string]string {
	t.Helper()
	out, errOut, code := cli(t, "pointer", "show", path)
	if code != 0 {
		t.Fatalf("pointer show: exit %d: %s", code, errOut)
	}
	kv := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			t.Fatalf("pointer show line %q is not key: value", l)
		}
		kv[k] = v
	}
	return kv
}

// TestContractPointerFile holds the pointer file of §3 to its bytes: the
// layout of both slots computed independently (FNV-1a file key and
// fingerprint, CRC-32C), `pointer show` agreeing with the bytes, the
// fingerprint growing to 4096, the epoch kept across appends, touches and
// a same-content copy, and reset under a new epoch on replacement,
// truncation, a corrupt or short pointer file; a corrupt newest slot falls
// back to the other one.
func TestContractPointerFile(t *testing.T) {
	e := newEnv(t, committedConfig)
	in := newInput(t, e.path("in.log"))
	ptr := e.path("state/feeds/app.ptr")
	in.appendLines(20) // < 4 KiB

	// run settles a daemon with the pointer at the input's end, checks its
	// reports while it runs, stops it and returns the last report.
	run := func(t *testing.T, wantSeq int) ctFeed {
		t.Helper()
		d := e.start()
		s := ctSample(t, d)
		r := ctWait(t, d, "settled at the input's end", func(r *ctReport) bool {
			f := r.Feeds[0]
			return r.Settled && f.Pointer != nil && f.Pointer.Offset == in.size()
		})
		s.finish()
		d.stop()
		f := r.Feeds[0]
		if wantSeq >= 0 && f.Sequence != uint64(wantSeq) {
			t.Errorf("sequence %d this run, want %d", f.Sequence, wantSeq)
		}
		if f.Pointer.Epoch != f.Epoch {
			t.Errorf("pointer epoch %s, feed epoch %s", f.Pointer.Epoch, f.Epoch)
		}
		return f
	}
	warned := func(t *testing.T) bool {
		t.Helper()
		return strings.Contains(e.runs[len(e.runs)-1].log(), "WARN")
	}
	// A reset rewrites the pointer file in place, never by rename: its
	// inode stays.
	var ptrIno uint64
	sameInode := func(t *testing.T) {
		t.Helper()
		st, err := os.Stat(ptr)
		if err != nil {
			t.Fatal(err)
		}
		ino := st.Sys().(*syscall.Stat_t).Ino
		if ptrIno == 0 {
			ptrIno = ino
		} else if ino != ptrIno {
			t.Errorf("pointer file inode %d, was %d: a reset rewrites the file in place, never by rename", ino, ptrIno)
		}
	}

	var epoch string
	t.Run("small file: fingerprint covers the whole file", func(t *testing.T) {
		f := run(t, 20)
		epoch = f.Epoch
		sameInode(t)
		_, a, b := ctReadPointer(t, ptr)
		n, _, _ := ctNewest(t, a, b)
		if n.fpLen != uint64(in.size()) || n.fp != ctFingerprint(t, in.path, n.fpLen) {
			t.Errorf("fingerprint length %d value %016x, want %d and FNV-1a %016x", n.fpLen, n.fp, in.size(), ctFingerprint(t, in.path, uint64(in.size())))
		}
		if fmt.Sprintf("%016x", n.epoch) != epoch || n.epoch == 0 {
			t.Errorf("slot epoch %016x, feed.status %s", n.epoch, epoch)
		}
	})

	in.appendLines(300) // well past 4 KiB
	old := time.Now().Add(-time.Hour)
	os.Chtimes(in.path, old, old)
	var last ctFeed
	t.Run("append and touch keep the epoch", func(t *testing.T) {
		last = run(t, 300)
		if last.Epoch != epoch {
			t.Errorf("epoch %s after an append and a touch, want %s (never a reset)", last.Epoch, epoch)
		}
	})

	t.Run("slot layout", func(t *testing.T) {
		data, a, b := ctReadPointer(t, ptr)
		n, letter, other := ctNewest(t, a, b)
		if n.offset != in.size() {
			t.Errorf("slot %s offset %d, want %d", letter, n.offset, in.size())
		}
		if n.epoch == 0 || fmt.Sprintf("%016x", n.epoch) != epoch {
			t.Errorf("slot %s epoch %016x, want %s (never 0)", letter, n.epoch, epoch)
		}
		if want := ctFileKey(t, in.path); n.key != want {
			t.Errorf("slot %s file key %016x, want FNV-1a(dev, ino) %016x", letter, n.key, want)
		}
		if n.fpLen != 4096 {
			t.Errorf("fingerprint length %d, want 4096 once a commit happened on a file ≥ 4 KiB", n.fpLen)
		} else if want := ctFingerprint(t, in.path, 4096); n.fp != want {
			t.Errorf("fingerprint %016x, want FNV-1a of the first 4096 bytes %016x", n.fp, want)
		}
		if n.count == 0 || n.count != last.Pointer.Commits {
			t.Errorf("commit counter %d, feed.status pointer.commits %d", n.count, last.Pointer.Commits)
		}
		// The other slot: a valid older record of the same epoch (a reset
		// writes both; no older epoch is ever left), or never written.
		if other.why == "" {
			if other.count >= n.count || other.epoch != n.epoch || other.offset > n.offset {
				t.Errorf("other slot: counter %d epoch %016x offset %d; newest %d %016x %d", other.count, other.epoch, other.offset, n.count, n.epoch, n.offset)
			}
		} else if otherHalf := data[512:]; letter == "B" {
			otherHalf = data[:512]
			if !bytes.Equal(otherHalf, make([]byte, 512)) {
				t.Errorf("other slot invalid (%s) but not empty", other.why)
			}
		}
	})

	t.Run("pointer show matches the bytes", func(t *testing.T) {
		_, a, b := ctReadPointer(t, ptr)
		n, letter, _ := ctNewest(t, a, b)
		want := map[string]string{
			"offset": strconv.FormatInt(n.offset, 10), "epoch": fmt.Sprintf("%016x", n.epoch),
			"fileKey": fmt.Sprintf("%016x", n.key), "fingerprintLength": strconv.FormatUint(n.fpLen, 10),
			"fingerprint": fmt.Sprintf("%016x", n.fp), "commits": strconv.FormatUint(n.count, 10),
			"slot": letter, "layout": "1",
		}
		got := ctShow(t, ptr)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("pointer show %s: %q, the bytes say %q", k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("pointer show printed %v, want the keys %v", got, want)
		}
		rec, _ := showPointer(t, ptr)
		if j := (pointerRecord{n.offset, want["epoch"], want["fileKey"], int64(n.fpLen), want["fingerprint"], n.count, letter, 1}); rec != j {
			t.Errorf("pointer show --json %+v, the bytes say %+v", rec, j)
		}
	})

	t.Run("each commit writes the other slot, counter + 1", func(t *testing.T) {
		d := e.start()
		defer d.stop()
		var lastLetter string
		var lastCount uint64
		for round := range 4 {
			in.appendLines(1) // one line: one commit
			r := ctWait(t, d, "settled at the end", func(r *ctReport) bool {
				return r.Settled && r.Feeds[0].Pointer.Offset == in.size()
			})
			_, a, b := ctReadPointer(t, ptr)
			n, letter, other := ctNewest(t, a, b)
			if n.offset != in.size() || n.count != r.Feeds[0].Pointer.Commits {
				t.Errorf("round %d: slot %s offset %d counter %d; want %d and pointer.commits %d", round, letter, n.offset, n.count, in.size(), r.Feeds[0].Pointer.Commits)
			}
			if round > 0 && (letter == lastLetter || n.count != lastCount+1 || other.count != lastCount) {
				t.Errorf("round %d: newest slot %s counter %d (other %d), previous %s %d: a commit writes the slot not holding the newest record, counter + 1",
					round, letter, n.count, other.count, lastLetter, lastCount)
			}
			lastLetter, lastCount = letter, n.count
		}
	})

	t.Run("same content under a new file key keeps the pointer", func(t *testing.T) {
		data, err := os.ReadFile(in.path)
		if err != nil {
			t.Fatal(err)
		}
		tmp := e.path("in.log.new")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, in.path); err != nil {
			t.Fatal(err)
		}
		in.appendLines(10)
		f := run(t, 10)
		if f.Epoch != epoch {
			t.Errorf("epoch %s after a copy of the same bytes, want %s kept", f.Epoch, epoch)
		}
		if !warned(t) {
			t.Errorf("no WARN for the new file key")
		}
		_, a, b := ctReadPointer(t, ptr)
		if n, _, _ := ctNewest(t, a, b); n.key != ctFileKey(t, in.path) {
			t.Errorf("file key %016x after the commit, want the new file's %016x", n.key, ctFileKey(t, in.path))
		}
	})

	t.Run("corrupt newest slot: the other one is used", func(t *testing.T) {
		data, a, b := ctReadPointer(t, ptr)
		_, letter, other := ctNewest(t, a, b)
		if other.why != "" {
			t.Fatalf("the other slot is not valid (%s); nothing to fall back to", other.why)
		}
		at := 8 // the newest slot's offset field
		if letter == "B" {
			at += 512
		}
		data[at] ^= 0x55
		if err := os.WriteFile(ptr, data, 0o644); err != nil {
			t.Fatal(err)
		}
		show := ctShow(t, ptr)
		wantSlot := map[string]string{"A": "B", "B": "A"}[letter]
		if show["slot"] != wantSlot || show["offset"] != strconv.FormatInt(other.offset, 10) {
			t.Errorf("pointer show after corrupting slot %s: slot %s offset %s, want %s %d", letter, show["slot"], show["offset"], wantSlot, other.offset)
		}
		f := run(t, len(in.texts)-in.firstAfter(other.offset))
		if f.Epoch != epoch {
			t.Errorf("epoch %s after falling back to the other slot, want %s (the same epoch)", f.Epoch, epoch)
		}
	})

	t.Run("replaced at open: new epoch from 0", func(t *testing.T) {
		f, err := os.OpenFile(in.path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteAt([]byte("L"), 0) // "line-…" → "Line-…": other first bytes
		f.Close()
		got := run(t, len(in.texts))
		if got.Epoch == epoch || !warned(t) {
			t.Errorf("epoch %s (was %s), WARN %v: a replaced file resets under a new epoch with a WARN", got.Epoch, epoch, warned(t))
		}
		epoch = got.Epoch
		sameInode(t)
	})

	t.Run("truncated at open: new epoch from 0", func(t *testing.T) {
		k := len(in.texts) - 50 // still > 4 KiB: the fingerprint matches, the size does not
		if err := os.Truncate(in.path, in.ends[k-1]); err != nil {
			t.Fatal(err)
		}
		in.texts, in.ends = in.texts[:k], in.ends[:k]
		got := run(t, k)
		if got.Epoch == epoch || !warned(t) {
			t.Errorf("epoch %s (was %s), WARN %v: a truncated file resets under a new epoch with a WARN", got.Epoch, epoch, warned(t))
		}
		epoch = got.Epoch
		sameInode(t)
	})

	t.Run("short pointer file: WARN and a fresh start at 0", func(t *testing.T) {
		if err := os.Truncate(ptr, 100); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := cli(t, "pointer", "show", ptr); code != 1 || errOut == "" {
			t.Errorf("pointer show on a 100-byte file: exit %d stderr %q, want 1 with the reason", code, errOut)
		}
		got := run(t, len(in.texts))
		if got.Epoch == epoch || !warned(t) {
			t.Errorf("epoch %s (was %s), WARN %v", got.Epoch, epoch, warned(t))
		}
		epoch = got.Epoch
		// A reset leaves no valid slot of an older epoch.
		_, a, b := ctReadPointer(t, ptr)
		for i, s := range []ctSlot{a, b} {
			if s.why == "" && fmt.Sprintf("%016x", s.epoch) != epoch {
				t.Errorf("slot %c holds epoch %016x after the reset to %s", 'A'+i, s.epoch, epoch)
			}
		}
	})

	t.Run("no valid slot: exit 1 from pointer show, WARN and a fresh start", func(t *testing.T) {
		if err := os.WriteFile(ptr, make([]byte, 1024), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := cli(t, "pointer", "show", ptr)
		if code != 1 || errOut == "" || out != "" {
			t.Errorf("pointer show on a zeroed file: exit %d stdout %q stderr %q, want 1 with the reason", code, out, errOut)
		}
		got := run(t, len(in.texts))
		if got.Epoch == epoch || !warned(t) {
			t.Errorf("epoch %s (was %s), WARN %v", got.Epoch, epoch, warned(t))
		}
	})
}

// ---------------------------------------------------------------------------
// §4 and §9: lines, positions, bytes.

const ctLinesConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
  token: ` + ctToken + `
shutdownTimeoutMillis: 1000
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
    maxLineBytes: 10
    pollIntervalMillis: 50
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
  - name: puller
    feed: app
    type: pull
    maxInFlight: 10000
`

// TestContractLines appends byte sequences one at a time to a tailed file
// and checks what a pull client and a file sink get: the lines of §9, the
// \r\n and trailing-\r rules of §4, positions as byte offsets after the
// terminator, NUL and invalid UTF-8 exact in the file and as U+FFFD in
// JSON (lineBase64 only with raw=1), maxLineBytes pieces and `oversized`,
// `unterminated` while tailing, and sequences from 1.
func TestContractLines(t *testing.T) {
	e := newEnv(t, ctLinesConfig)
	inPath := e.path("in.log")
	os.WriteFile(inPath, nil, 0o644)
	d := e.start()
	s := ctSample(t, d)

	var size int64     // bytes written to the input
	var wantOut []byte // what the file sink must hold
	var seq uint64
	epoch := ""
	// step appends data and expects these lines, each ending at the given
	// offset relative to the step's start.
	step := func(t *testing.T, data string, lines []string, ends []int64, query string) []ctEvent {
		t.Helper()
		base := size
		ctAppend(t, inPath, data)
		size += int64(len(data))
		evs := ctPullN(t, d, "puller", len(lines), query)
		for i, ev := range evs {
			seq++
			if epoch == "" {
				epoch = ev.Epoch
			}
			if ev.Line != ctJSONText(lines[i]) {
				t.Errorf("line %d: %q, want %q", i, ev.Line, lines[i])
			}
			if ev.Position != base+ends[i] || ev.Sequence != seq || ev.Attempt != 1 || ev.Feed != "app" ||
				ev.Epoch != epoch || !ctHex16.MatchString(ev.Epoch) || ev.Path != inPath {
				t.Errorf("event %d %+v: want position %d sequence %d attempt 1 feed app epoch %s path %s", i, ev, base+ends[i], seq, epoch, inPath)
			}
			if (ev.LineBase64 != nil) != strings.Contains(query, "raw=1") {
				t.Errorf("event %d: lineBase64 %v with query %q; it is there only with raw=1", i, ev.LineBase64, query)
			}
			wantOut = append(append(wantOut, lines[i]...), '\n')
		}
		if more := ctPull(t, d, "puller", "max=100&wait=150ms"); len(more) != 0 {
			t.Errorf("%d events more than the %d lines: %+v", len(more), len(lines), more)
		}
		ctAckAll(t, d, evs)
		waitUntil(t, "the file sink's output", 20*time.Second, func() bool {
			b, _ := os.ReadFile(e.path("out.log"))
			return len(b) >= len(wantOut)
		})
		if b, _ := os.ReadFile(e.path("out.log")); !bytes.Equal(b, wantOut) {
			t.Fatalf("file sink output %q, want %q", b, wantOut)
		}
		return evs
	}

	t.Run(`a\n\nb\n is three lines`, func(t *testing.T) {
		step(t, "a\n\nb\n", []string{"a", "", "b"}, []int64{2, 3, 5}, "")
	})
	t.Run(`\r\n is one terminator, \r one`, func(t *testing.T) {
		step(t, "c\r\nd\re\n", []string{"c", "d", "e"}, []int64{3, 5, 7}, "")
	})
	t.Run(`a trailing \r waits for the next byte`, func(t *testing.T) {
		step(t, "f\r", nil, nil, "")
		step(t, "\n", []string{"f"}, []int64{1}, "") // f\r\n: one line, position after \n
		step(t, "g\n\r", []string{"g"}, []int64{2}, "")
		step(t, "h\n", []string{"", "h"}, []int64{0, 2}, "") // the \r ended an empty line
	})
	t.Run("NUL and invalid UTF-8", func(t *testing.T) {
		raw := "n\x00u\xff\xfev"
		evs := step(t, raw+"\n", []string{raw}, []int64{7}, "raw=1")
		if want := "n\x00u\uFFFD\uFFFDv"; evs[0].Line != want {
			t.Errorf("JSON line %q, want %q (one U+FFFD per invalid byte)", evs[0].Line, want)
		}
		if evs[0].LineBase64 == nil {
			t.Fatal("no lineBase64 with raw=1")
		}
		if b, err := base64.StdEncoding.DecodeString(*evs[0].LineBase64); err != nil || string(b) != raw {
			t.Errorf("lineBase64 %q decodes to %q (%v), want the raw bytes %q", *evs[0].LineBase64, b, err, raw)
		}
	})
	t.Run("unterminated while tailing", func(t *testing.T) {
		step(t, "tail", nil, nil, "")
		ctWait(t, d, "unterminated 4", func(r *ctReport) bool { return r.Feeds[0].Unterminated == 4 })
		step(t, "\n", []string{"tail"}, []int64{1}, "")
		ctWait(t, d, "unterminated 0", func(r *ctReport) bool { return r.Feeds[0].Unterminated == 0 })
	})
	t.Run("maxLineBytes pieces", func(t *testing.T) {
		step(t, "0123456789abcdefghijKLMNO\n", []string{"0123456789", "abcdefghij", "KLMNO"}, []int64{10, 20, 26}, "")
		r := ctWait(t, d, "oversized 1", func(r *ctReport) bool { return r.Feeds[0].Oversized >= 1 })
		if r.Feeds[0].Oversized != 1 {
			t.Errorf("oversized %d after one long line in 3 pieces, want 1 (lines, not pieces)", r.Feeds[0].Oversized)
		}
		// Exactly twice the limit: two pieces, none empty.
		step(t, "ABCDEFGHIJklmnopqrst\n", []string{"ABCDEFGHIJ", "klmnopqrst"}, []int64{10, 21}, "")
		// Exactly the limit: one line, not oversized.
		step(t, "0123456789\n", []string{"0123456789"}, []int64{11}, "")
		// Exactly the limit while tailing: it may still grow, so nothing
		// yet; the terminator makes it one line (no empty piece after it).
		step(t, "ABCDEFGHIJ", nil, nil, "")
		step(t, "\n", []string{"ABCDEFGHIJ"}, []int64{1}, "")
		step(t, "abcdefghij\r", nil, nil, "")
		step(t, "\n", []string{"abcdefghij"}, []int64{1}, "")
		r = ctWait(t, d, "settled", func(r *ctReport) bool { return r.Settled })
		if r.Feeds[0].Oversized != 2 {
			t.Errorf("oversized %d, want 2", r.Feeds[0].Oversized)
		}
	})
	t.Run("settled: sequence, acknowledged, pointer at the end", func(t *testing.T) {
		r := ctWait(t, d, "settled at the end", func(r *ctReport) bool {
			return r.Settled && r.Feeds[0].Pointer.Offset == size
		})
		f := r.Feeds[0]
		if f.Sequence != seq || f.Acknowledged != seq || f.PendingAcks != 0 || f.Epoch != epoch || f.Pointer.Epoch != epoch {
			t.Errorf("sequence %d acknowledged %d pendingAcks %d epoch %s/%s; want %d %d 0 %s", f.Sequence, f.Acknowledged, f.PendingAcks, f.Epoch, f.Pointer.Epoch, seq, seq, epoch)
		}
		for _, sub := range f.Subscribers {
			if sub.Position != seq || sub.Dispatched != seq || !sub.Drained || sub.State != "LIVE" {
				t.Errorf("subscriber %+v, want position = dispatched = %d, drained, LIVE", sub, seq)
			}
		}
	})
	s.finish()
	d.stop()
}

// ctJSONText is s as a JSON string carries it: one U+FFFD per invalid
// UTF-8 byte (what Go's encoding/json does).
func ctJSONText(s string) string {
	var out string
	json.Unmarshal(ctJSON(s), &out)
	return out
}

// TestContractOnceReads: a once-read treats `a\n\r` as two lines (a final
// lone \r is a terminator) and ONCE_LATEST delivers nothing.
func TestContractOnceReads(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: oe
    path: ./oe.log
    readStrategy: ONCE_EARLIEST
  - name: ol
    path: ./ol.log
    readStrategy: ONCE_LATEST
processors:
  - name: oeout
    feed: oe
    type: file
    path: ./oe.out
  - name: olout
    feed: ol
    type: file
    path: ./ol.out
`)
	os.WriteFile(e.path("oe.log"), []byte("a\n\r"), 0o644)
	os.WriteFile(e.path("ol.log"), []byte("x\ny\npartial"), 0o644)
	d := e.start()
	s := ctSample(t, d)
	r := ctWait(t, d, "settled", func(r *ctReport) bool { return r.Settled })
	s.finish()
	oe, ol := r.feed(t, "oe"), r.feed(t, "ol")
	if oe.Sequence != 2 || oe.Unterminated != 0 || oe.State != "END_OF_STREAM" || !oe.Bounded {
		t.Errorf("ONCE_EARLIEST of a\\n\\r: sequence %d unterminated %d state %s bounded %v; want 2 0 END_OF_STREAM true", oe.Sequence, oe.Unterminated, oe.State, oe.Bounded)
	}
	if ol.Sequence != 0 || ol.Unterminated != 0 || ol.State != "END_OF_STREAM" || !ol.Bounded || !ctHex16.MatchString(ol.Epoch) || ol.Pointer != nil {
		t.Errorf("ONCE_LATEST: sequence %d unterminated %d state %s bounded %v epoch %q pointer %v; want 0 0 END_OF_STREAM true, an epoch, no pointer",
			ol.Sequence, ol.Unterminated, ol.State, ol.Bounded, ol.Epoch, ol.Pointer)
	}
	d.stop()
	if b, _ := os.ReadFile(e.path("oe.out")); string(b) != "a\n\n" {
		t.Errorf("output %q, want %q", b, "a\n\n")
	}
	if b, _ := os.ReadFile(e.path("ol.out")); len(b) != 0 {
		t.Errorf("ONCE_LATEST delivered %q", b)
	}
}

// TestContractReadStrategies runs one feed per strategy (and the COMMITED
// alias) on files with two lines and a partial one: what each reads at
// start, after an append and after a restart; `pointer` only for
// COMMITTED, an epoch for every strategy, a fresh one per open except for
// COMMITTED; `bounded` and END_OF_STREAM for ONCE_*.
func TestContractReadStrategies(t *testing.T) {
	strategies := []struct{ name, strategy, content string }{
		{"c", "COMMITTED", "p1\np2\npart"},
		{"c2", "COMMITED", "p1\np2\npart"},
		{"e", "EARLIEST", "p1\np2\npart"},
		{"l", "LATEST", "p1\np2\n"},
		{"oe", "ONCE_EARLIEST", "p1\np2\npart"},
		{"ol", "ONCE_LATEST", "p1\np2\npart"},
	}
	var cfg strings.Builder
	cfg.WriteString("dataDir: ./state\nstatus:\n  listen: {{ADDR}}\nfeeds:\n")
	for _, s := range strategies {
		fmt.Fprintf(&cfg, "  - name: %s\n    path: ./%s.log\n    readStrategy: %s\n    pollIntervalMillis: 50\n", s.name, s.name, s.strategy)
	}
	cfg.WriteString("processors:\n")
	for _, s := range strategies {
		fmt.Fprintf(&cfg, "  - name: %sout\n    feed: %s\n    type: file\n    path: ./%s.out\n", s.name, s.name, s.name)
	}
	e := newEnv(t, cfg.String())
	for _, s := range strategies {
		os.WriteFile(e.path(s.name+".log"), []byte(s.content), 0o644)
	}
	out := func(name string) string {
		b, _ := os.ReadFile(e.path(name + ".out"))
		return string(b)
	}
	type want struct {
		seq   uint64
		state string
		unt   int64
		out   string
	}
	check := func(t *testing.T, r *ctReport, wants map[string]want) {
		t.Helper()
		for _, s := range strategies {
			f := r.feed(t, s.name)
			w := wants[s.name]
			once := strings.HasPrefix(s.strategy, "ONCE_")
			committed := strings.HasPrefix(s.strategy, "COMMIT")
			if f.Sequence != w.seq || f.State != w.state || f.Unterminated != w.unt || f.Bounded != once ||
				(f.Pointer != nil) != committed || !ctHex16.MatchString(f.Epoch) || !f.Settled || !f.Lossless {
				t.Errorf("%s (%s): sequence %d state %s unterminated %d bounded %v pointer %v epoch %q settled %v lossless %v;\n"+
					"  want %d %s %d %v, pointer only for COMMITTED, an epoch, settled, lossless",
					s.name, s.strategy, f.Sequence, f.State, f.Unterminated, f.Bounded, f.Pointer, f.Epoch, f.Settled, f.Lossless,
					w.seq, w.state, w.unt, once)
			}
			if committed && f.Pointer != nil && f.Pointer.Epoch != f.Epoch {
				t.Errorf("%s: pointer epoch %s, feed epoch %s", s.name, f.Pointer.Epoch, f.Epoch)
			}
			if got := out(s.name); got != w.out {
				t.Errorf("%s (%s) output %q, want %q", s.name, s.strategy, got, w.out)
			}
			_, err := os.Stat(e.path("state/feeds/" + s.name + ".ptr"))
			if committed != (err == nil) {
				t.Errorf("%s (%s): pointer file exists: %v; only COMMITTED has one", s.name, s.strategy, err == nil)
			}
		}
	}
	settledAll := func(d *daemon, seqs map[string]uint64) *ctReport {
		return ctWait(t, d, "every feed settled", func(r *ctReport) bool {
			for _, f := range r.Feeds {
				if f.Sequence != seqs[f.Feed] {
					return false
				}
			}
			return r.Settled
		})
	}

	d := e.start()
	s := ctSample(t, d)
	r1 := settledAll(d, map[string]uint64{"c": 2, "c2": 2, "e": 2, "oe": 2})
	t.Run("at start", func(t *testing.T) {
		check(t, r1, map[string]want{
			"c":  {2, "CAUGHT_UP", 4, "p1\np2\n"},
			"c2": {2, "CAUGHT_UP", 4, "p1\np2\n"},
			"e":  {2, "CAUGHT_UP", 4, "p1\np2\n"},
			"l":  {0, "CAUGHT_UP", 0, ""},
			"oe": {2, "END_OF_STREAM", 4, "p1\np2\n"},
			"ol": {0, "END_OF_STREAM", 0, ""},
		})
	})
	for _, st := range strategies {
		ctAppend(t, e.path(st.name+".log"), "X\n")
	}
	r2 := settledAll(d, map[string]uint64{"c": 3, "c2": 3, "e": 3, "l": 1, "oe": 2})
	t.Run("after an append", func(t *testing.T) {
		check(t, r2, map[string]want{
			"c":  {3, "CAUGHT_UP", 0, "p1\np2\npartX\n"},
			"c2": {3, "CAUGHT_UP", 0, "p1\np2\npartX\n"},
			"e":  {3, "CAUGHT_UP", 0, "p1\np2\npartX\n"},
			"l":  {1, "CAUGHT_UP", 0, "X\n"},
			"oe": {2, "END_OF_STREAM", 4, "p1\np2\n"},
			"ol": {0, "END_OF_STREAM", 0, ""},
		})
		for _, f := range r2.Feeds {
			if f.Epoch != r1.feed(t, f.Feed).Epoch {
				t.Errorf("%s: epoch changed from %s to %s by an append", f.Feed, r1.feed(t, f.Feed).Epoch, f.Epoch)
			}
		}
	})
	s.finish()
	d.stop()

	d = e.start()
	s = ctSample(t, d)
	r3 := settledAll(d, map[string]uint64{"e": 3, "oe": 3})
	s.finish()
	d.stop()
	t.Run("after a restart", func(t *testing.T) {
		check(t, r3, map[string]want{
			"c":  {0, "CAUGHT_UP", 0, "p1\np2\npartX\n"},
			"c2": {0, "CAUGHT_UP", 0, "p1\np2\npartX\n"},
			"e":  {3, "CAUGHT_UP", 0, "p1\np2\npartX\np1\np2\npartX\n"},
			"l":  {0, "CAUGHT_UP", 0, "X\n"},
			"oe": {3, "END_OF_STREAM", 0, "p1\np2\np1\np2\npartX\n"},
			"ol": {0, "END_OF_STREAM", 0, ""},
		})
		for _, f := range r3.Feeds {
			same := f.Epoch == r2.feed(t, f.Feed).Epoch
			if committed := f.Feed == "c" || f.Feed == "c2"; same != committed {
				t.Errorf("%s: epoch %s before the restart, %s after; only COMMITTED keeps its epoch", f.Feed, r2.feed(t, f.Feed).Epoch, f.Epoch)
			}
		}
	})
}

// ---------------------------------------------------------------------------
// §7 feed.status, settled and acknowledged with a pull client.

// TestContractStatusReport: a COMMITTED feed with a file sink and a pull
// client, and an ONCE_EARLIEST feed next to it. Every report sampled
// throughout has every field of §7 with its type, consistent settled and
// lossless, and a version that rises with every change. The pull client's
// ACKs move `acknowledged` and `dispatched` only in queue order; the feed is
// paused or pending, never stalled, while the client is slow.
func TestContractStatusReport(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
  token: `+ctToken+`
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
  - name: once
    path: ./once.log
    readStrategy: ONCE_EARLIEST
processors:
  - name: archive
    feed: app
    type: file
    path: ./out.log
  - name: puller
    feed: app
    type: pull
  - name: sink
    feed: once
    type: discard
`)
	in := newInput(t, e.path("in.log"))
	in.appendLines(5)
	os.WriteFile(e.path("once.log"), []byte("x\n"), 0o644)
	d := e.start()
	s := ctSample(t, d)

	r, raw := ctStatus(t, d)
	if probs := ctCheckReport(raw, nil); len(probs) > 0 {
		t.Fatalf("first report: %v\n%s", probs, raw)
	}
	r = ctWait(t, d, "5 lines published", func(r *ctReport) bool { return r.feed(t, "app").Sequence == 5 })
	f := r.feed(t, "app")
	if f.Consumers != 2 || f.Policy != "PAUSE" || f.Path != in.path || f.Bounded || r.Settled || f.Settled || f.Stalled != nil {
		t.Errorf("before any ACK: consumers %d policy %s path %s bounded %v settled %v/%v stalled %v; want 2 PAUSE %s false false false null",
			f.Consumers, f.Policy, f.Path, f.Bounded, r.Settled, f.Settled, f.Stalled, in.path)
	}
	if o := r.feed(t, "once"); !o.Bounded || o.Pointer != nil || o.Consumers != 1 {
		t.Errorf("once feed: bounded %v pointer %v consumers %d", o.Bounded, o.Pointer, o.Consumers)
	}
	evs := ctPullN(t, d, "puller", 5, "")
	for i, ev := range evs {
		if ev.Sequence != uint64(i+1) {
			t.Errorf("event %d sequence %d, want %d (sequences start at 1)", i, ev.Sequence, i+1)
		}
	}
	r = ctWait(t, d, "archive finished", func(r *ctReport) bool { return r.feed(t, "app").sub(t, "archive").Dispatched == 5 })
	if f := r.feed(t, "app"); f.Acknowledged != 0 || f.PendingAcks == 0 || f.Settled || f.Stalled != nil || f.sub(t, "puller").Dispatched != 0 {
		t.Errorf("nothing acknowledged by the client: acknowledged %d pendingAcks %d settled %v stalled %v puller %+v",
			f.Acknowledged, f.PendingAcks, f.Settled, f.Stalled, f.sub(t, "puller"))
	}

	ctAckAll(t, d, evs[:2])
	ctWait(t, d, "acknowledged 2, committed", func(r *ctReport) bool {
		f := r.feed(t, "app")
		return f.Acknowledged == 2 && f.Pointer.Offset == in.ends[1]
	})
	ctAckAll(t, d, evs[3:4]) // out of order: waits for line 3
	time.Sleep(100 * time.Millisecond)
	r, _ = ctStatus(t, d)
	if f := r.feed(t, "app"); f.Acknowledged != 2 || f.sub(t, "puller").Dispatched != 2 || f.Pointer.Offset != in.ends[1] {
		t.Errorf("after ACKs of lines 1, 2 and 4: acknowledged %d dispatched %d pointer %d; want 2 2 %d (an ACK of line 4 waits for line 3)",
			f.Acknowledged, f.sub(t, "puller").Dispatched, f.Pointer.Offset, in.ends[1])
	}
	ctAckAll(t, d, []ctEvent{evs[2], evs[4]})
	r = ctWait(t, d, "settled", func(r *ctReport) bool { return r.Settled })
	if f := r.feed(t, "app"); f.Acknowledged != 5 || f.Pointer.Offset != in.size() || !f.Drained || f.PendingAcks != 0 {
		t.Errorf("settled: acknowledged %d pointer %d drained %v pendingAcks %d; want 5 %d true 0", f.Acknowledged, f.Pointer.Offset, f.Drained, f.PendingAcks, in.size())
	}

	// `tailfeed status`: exit 0 settled and lossless; --json is the report;
	// --addr takes host:port or a URL.
	for _, addr := range []string{d.addr, "http://" + d.addr, "http://" + d.addr + "/"} {
		if out, errOut, code := cli(t, "status", "--addr", addr); code != 0 {
			t.Errorf("status --addr %s: exit %d, want 0\n%s%s", addr, code, out, errOut)
		}
	}
	out, _, code := cli(t, "status", "--addr", d.addr, "--json")
	if probs := ctCheckReport([]byte(out), nil); code != 0 || len(probs) > 0 {
		t.Errorf("status --json: exit %d, %v: %s", code, probs, out)
	}
	// Not settled (a pulled line unacknowledged) within the wait: exit 3.
	in.appendLines(1)
	ctPullN(t, d, "puller", 1, "")
	if out, errOut, code := cli(t, "status", "--addr", d.addr, "--wait-settled", "300ms"); code != 3 {
		t.Errorf("status with a line unacknowledged: exit %d, want 3\n%s%s", code, out, errOut)
	}
	s.finish()
	d.stop()
}

// ---------------------------------------------------------------------------
// §7 HTTP: token, order of checks, pull API, state.

const ctHTTPConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
  token: ` + ctToken + `
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
processors:
  - name: puller
    feed: app
    type: pull
    maxInFlight: 20000
    ackTimeoutMillis: 60000
  - name: counter
    feed: app
    type: count
    match: '^(?P<key>[a-z]+)-'
`

// TestContractHTTP checks §7's HTTP rules one by one: the token on pull,
// ack, nack, state and admin (never on /healthz, not on /feed.status and
// /metrics without protectRead), 401 before 404/405 before 413/400, every
// 4xx an {"error":…} body, the pull API's max/wait/raw, single and batch
// ACKs, a NACK redelivered within 100 ms with attempt + 1, /v1/state, and
// /metrics in the Prometheus text format.
func TestContractHTTP(t *testing.T) {
	e := newEnv(t, ctHTTPConfig)
	inPath := e.path("in.log")
	var lines []string
	for i := range 150 {
		lines = append(lines, []string{"red", "green", "blue"}[i%3]+fmt.Sprintf("-%03d", i))
	}
	os.WriteFile(inPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	d := e.start()
	s := ctSample(t, d)

	huge := bytes.Repeat([]byte(" "), 2<<20)
	t.Run("open endpoints", func(t *testing.T) {
		ctExpect(t, d, http.MethodGet, "/healthz", "", nil, 200)
		ctExpect(t, d, http.MethodGet, "/feed.status", "", nil, 200)
		ctExpect(t, d, http.MethodGet, "/metrics", "", nil, 200)
		ctExpect(t, d, http.MethodGet, "/healthz", "wrong", nil, 200)
	})
	protected := []struct{ method, path string }{
		{"GET", "/v1/pull/puller"},
		{"POST", "/v1/ack"},
		{"POST", "/v1/nack"},
		{"GET", "/v1/state/counter"},
		{"GET", "/admin/dlq/puller"},
		{"POST", "/admin/dlq/puller/replay"},
		{"DELETE", "/admin/dlq/puller"},
		{"POST", "/admin/release/app/puller"},
	}
	t.Run("token: missing or wrong is 401", func(t *testing.T) {
		for _, p := range protected {
			ctExpect(t, d, p.method, p.path, "", nil, 401)
			ctExpect(t, d, p.method, p.path, ctToken+"x", nil, 401)
			req, _ := http.NewRequest(p.method, "http://"+d.addr+p.path, nil)
			req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("x:"+ctToken)))
			if resp, err := httpClient.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode != 401 {
					t.Errorf("%s %s with Basic auth: %d, want 401", p.method, p.path, resp.StatusCode)
				}
			}
		}
	})
	t.Run("token: the scheme is case-insensitive", func(t *testing.T) {
		req, _ := http.NewRequest("GET", "http://"+d.addr+"/v1/state/counter", nil)
		req.Header.Set("Authorization", "bearer "+ctToken)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("Authorization: bearer <token>: %d, want 200 (RFC 7235: the scheme is case-insensitive)", resp.StatusCode)
		}
	})
	t.Run("order: token, route and method, body", func(t *testing.T) {
		ctExpect(t, d, "GET", "/v1/pull/ghost", "", nil, 401)
		ctExpect(t, d, "GET", "/v1/pull/ghost", ctToken, nil, 404)
		ctExpect(t, d, "POST", "/v1/pull/puller", "", nil, 401)
		ctExpect(t, d, "POST", "/v1/pull/puller", ctToken, nil, 405)
		ctExpect(t, d, "POST", "/v1/ack", "", huge, 401)
		ctExpect(t, d, "PUT", "/v1/ack", ctToken, huge, 405)
		ctExpect(t, d, "GET", "/v1/ack", ctToken, nil, 405)
		ctExpect(t, d, "POST", "/v1/ack", ctToken, huge, 413)
		ctExpect(t, d, "POST", "/v1/nack", ctToken, huge, 413)
		ctExpect(t, d, "GET", "/v1/state/ghost", ctToken, nil, 404)
		ctExpect(t, d, "GET", "/admin/dlq/ghost", ctToken, nil, 404)
		ctExpect(t, d, "POST", "/admin/dlq/ghost/replay", ctToken, nil, 404)
		ctExpect(t, d, "DELETE", "/admin/dlq/ghost", ctToken, nil, 404)
		ctExpect(t, d, "POST", "/admin/release/app/ghost", ctToken, nil, 404)
		ctExpect(t, d, "POST", "/admin/release/ghost/puller", ctToken, nil, 404)
		ctExpect(t, d, "GET", "/admin/release/app/puller", ctToken, nil, 405)
		ctExpect(t, d, "PUT", "/admin/dlq/puller", ctToken, nil, 405)
		ctExpect(t, d, "POST", "/feed.status", "", nil, 405)
		ctExpect(t, d, "POST", "/healthz", "", nil, 405)
		ctExpect(t, d, "POST", "/metrics", "", nil, 405)
		ctExpect(t, d, "GET", "/nope", ctToken, nil, 404)
		for _, path := range []string{"/v1/ack", "/v1/nack"} {
			for name, body := range map[string]string{
				"malformed":      `{"deliveryId":`,
				"unknown field":  `{"deliveryId":"x","extra":1}`,
				"wrong type":     `{"deliveryId":5}`,
				"wrong type ids": `{"deliveryIds":"x"}`,
				"trailing data":  `{"deliveryId":"x"} {}`,
				"empty":          ``,
			} {
				t.Run(path+" "+name, func(t *testing.T) {
					ctExpect(t, d, "POST", path, ctToken, []byte(body), 400)
				})
			}
			ctExpect(t, d, "POST", path, ctToken, []byte(`{"deliveryId":"puller:nope"}`), 404)
		}
	})

	t.Run("pull parameters", func(t *testing.T) {
		for _, q := range []string{"max=0", "max=10001", "max=-1", "max=x", "wait=31s", "wait=abc", "wait=1h"} {
			ctExpect(t, d, "GET", "/v1/pull/puller?"+q, ctToken, nil, 400)
		}
	})

	var all []ctEvent
	t.Run("pull: default max 100, fields, raw only on request", func(t *testing.T) {
		waitUntil(t, "150 lines published", 20*time.Second, func() bool {
			r, _ := ctStatus(t, d)
			return r.Feeds[0].Sequence == 150
		})
		first := ctPull(t, d, "puller", "wait=1s")
		if len(first) != 100 {
			t.Fatalf("pull without max: %d events, want the default 100", len(first))
		}
		rest := ctPull(t, d, "puller", "max=10000&raw=1")
		all = append(first, rest...)
		r, _ := ctStatus(t, d)
		for _, ev := range all {
			i := int(ev.Sequence) - 1
			if i < 0 || i >= len(lines) || ev.Line != lines[i] || ev.Epoch != r.Feeds[0].Epoch || ev.Path != inPath ||
				ev.Attempt != 1 || ev.Feed != "app" || ev.DeliveryID == "" {
				t.Fatalf("event %+v does not carry line %d of feed app, epoch %s, path %s", ev, i+1, r.Feeds[0].Epoch, inPath)
			}
			var end int64
			for _, l := range lines[:i+1] {
				end += int64(len(l)) + 1
			}
			if ev.Position != end {
				t.Fatalf("event %d position %d, want %d", i, ev.Position, end)
			}
		}
		for _, ev := range first {
			if ev.LineBase64 != nil {
				t.Fatalf("lineBase64 without raw=1: %+v", ev)
			}
		}
		for _, ev := range rest {
			if ev.LineBase64 == nil {
				t.Fatalf("no lineBase64 with raw=1: %+v", ev)
			}
		}
		ids := map[string]bool{}
		for _, ev := range all {
			if ids[ev.DeliveryID] || len(ev.DeliveryID) < 16 {
				t.Fatalf("deliveryId %q repeated or too short to be unguessable", ev.DeliveryID)
			}
			ids[ev.DeliveryID] = true
		}
		if empty := ctPull(t, d, "puller", "max=5"); len(empty) != 0 {
			t.Fatalf("%d events when every line is out", len(empty))
		}
	})

	t.Run("ack: single, repeated, unknown; batch", func(t *testing.T) {
		if len(all) < 3 {
			t.Skip("no events")
		}
		body := ctExpect(t, d, "POST", "/v1/ack", ctToken, ctJSON(map[string]string{"deliveryId": all[0].DeliveryID}), 200)
		var st map[string]any
		if json.Unmarshal(body, &st); st["status"] != "acked" || len(st) != 1 {
			t.Errorf("single ACK body %s, want {\"status\":\"acked\"}", body)
		}
		ctExpect(t, d, "POST", "/v1/ack", ctToken, ctJSON(map[string]string{"deliveryId": all[0].DeliveryID}), 404)
		body = ctExpect(t, d, "POST", "/v1/ack", ctToken, ctJSON(map[string][]string{"deliveryIds": {all[1].DeliveryID, "puller:bogus", all[0].DeliveryID}}), 200)
		var b struct {
			Acked   *int      `json:"acked"`
			Unknown *[]string `json:"unknown"`
		}
		if json.Unmarshal(body, &b); b.Acked == nil || *b.Acked != 1 || b.Unknown == nil || strings.Join(*b.Unknown, ",") != "puller:bogus,"+all[0].DeliveryID {
			t.Errorf("batch ACK body %s, want {\"acked\":1,\"unknown\":[\"puller:bogus\",%q]}", body, all[0].DeliveryID)
		}
	})

	t.Run("nack: redelivered within 100 ms with attempt + 1", func(t *testing.T) {
		if len(all) < 3 {
			t.Skip("no events")
		}
		ev := all[2]
		ctExpect(t, d, "POST", "/v1/nack", ctToken, ctJSON(map[string]string{"deliveryId": ev.DeliveryID}), 200)
		// The daemon's own wait bounds it: within 100 ms or not at all.
		again := ctPull(t, d, "puller", "max=10&wait=100ms")
		if len(again) != 1 || again[0].Sequence != ev.Sequence || again[0].Attempt != 2 || again[0].Position != ev.Position || again[0].DeliveryID == ev.DeliveryID {
			t.Fatalf("after a NACK: %+v, want line %d again with attempt 2 and a new id within 100 ms", again, ev.Sequence)
		}
		ctExpect(t, d, "POST", "/v1/ack", ctToken, ctJSON(map[string]string{"deliveryId": ev.DeliveryID}), 404)
		ctExpect(t, d, "POST", "/v1/nack", ctToken, ctJSON(map[string]string{"deliveryId": ev.DeliveryID}), 404)
		all[2] = again[0]
		ctAckAll(t, d, all[2:])
		ctWait(t, d, "settled", func(r *ctReport) bool { return r.Settled })
	})

	t.Run("wait returns when a line comes", func(t *testing.T) {
		go func() {
			time.Sleep(200 * time.Millisecond)
			if f, err := os.OpenFile(inPath, os.O_WRONLY|os.O_APPEND, 0); err == nil {
				f.WriteString("red-late\n")
				f.Close()
			}
		}()
		start := time.Now()
		evs := ctPull(t, d, "puller", "max=1&wait=30s")
		if len(evs) != 1 || evs[0].Line != "red-late" {
			t.Fatalf("pull with wait=30s: %+v", evs)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("pull with wait=30s returned after %v although a line came after 200 ms", took)
		}
		ctAckAll(t, d, evs)
		lines = append(lines, "red-late")
	})

	t.Run("state of a count processor", func(t *testing.T) {
		ctWait(t, d, "settled", func(r *ctReport) bool { return r.Settled })
		var body []byte
		waitUntil(t, "the counts", 20*time.Second, func() bool {
			body = ctExpect(t, d, "GET", "/v1/state/counter", ctToken, nil, 200)
			return bytes.Contains(body, []byte(`"red":51`))
		})
		var st map[string]any
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatalf("state body %s: %v", body, err)
		}
		want := map[string]float64{"red": 51, "green": 50, "blue": 50}
		if !ctHasCounts(st, want) {
			t.Errorf("state %s does not hold the counts %v", body, want)
		}
	})

	t.Run("metrics: Prometheus text", func(t *testing.T) {
		code, hdr, body := ctDo(t, d, "GET", "/metrics", "", nil)
		if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
			t.Fatalf("/metrics: %d Content-Type %q", code, hdr.Get("Content-Type"))
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
		if err != nil || len(fams) == 0 {
			t.Fatalf("/metrics is not Prometheus text (%v, %d families):\n%.500s", err, len(fams), body)
		}
	})
	s.finish()
	d.stop()
}

// ctHasCounts looks for an object holding exactly the counts anywhere in v.
func ctHasCounts(v any, want map[string]float64) bool {
	switch v := v.(type) {
	case map[string]any:
		match := len(v) == len(want)
		for k, n := range want {
			if v[k] != n {
				match = false
			}
		}
		if match {
			return true
		}
		for _, x := range v {
			if ctHasCounts(x, want) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if ctHasCounts(x, want) {
				return true
			}
		}
	}
	return false
}

// TestContractProtectReadAndEnvToken: with protectRead the status and the
// metrics need the token too (/healthz never), and TAILFEED_TOKEN read by
// `run` replaces status.token.
func TestContractProtectReadAndEnvToken(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
  token: config-token
  protectRead: true
log: {level: info, format: json}
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
processors:
  - name: puller
    feed: app
    type: pull
`)
	os.WriteFile(e.path("in.log"), []byte("a\n"), 0o644)
	d := ctStart(e, e.dir, "TAILFEED_TOKEN=env-token")
	ctExpect(t, d, "GET", "/healthz", "", nil, 200)
	for _, p := range []string{"/feed.status", "/metrics", "/v1/pull/puller"} {
		ctExpect(t, d, "GET", p, "", nil, 401)
		ctExpect(t, d, "GET", p, "config-token", nil, 401)
		ctExpect(t, d, "GET", p, "env-token", nil, 200)
	}
	if _, errOut, code := cli(t, "status", "--addr", d.addr); code != 2 {
		t.Errorf("status against a protected report without the token: exit %d, want 2 (not a report): %s", code, errOut)
	}
	d.stop()
	// log.format json: every log line is a JSON object.
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(d.log()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("log line %q is not JSON under log.format json", l)
		}
		n++
	}
	if n == 0 {
		t.Errorf("no log lines at level info")
	}
}

// ---------------------------------------------------------------------------
// §6/§7 webhook, dead letters, holds and release, lossless.

// ctHook is a webhook receiver that records every request; a body to
// /ingest holding "POISON" is a 400 while poison is on, and the path /hold answers 503
// while hold is on.
type ctHook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	reqs   []ctHookReq
	poison bool
	hold   bool
}

type ctHookReq struct {
	path    string
	method  string
	header  http.Header
	objects []map[string]json.RawMessage
	body    []byte
	code    int
}

func newCtHook(t *testing.T) *ctHook {
	h := &ctHook{poison: true, hold: true}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := ctHookReq{path: r.URL.Path, method: r.Method, header: r.Header.Clone(), body: body, code: 200}
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var o map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &o) == nil {
				req.objects = append(req.objects, o)
			} else {
				req.objects = append(req.objects, nil)
			}
		}
		h.mu.Lock()
		switch {
		case h.poison && r.URL.Path == "/ingest" && bytes.Contains(body, []byte("POISON")):
			req.code = 400
		case h.hold && r.URL.Path == "/hold":
			req.code = 503
		}
		h.reqs = append(h.reqs, req)
		h.mu.Unlock()
		w.WriteHeader(req.code)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *ctHook) set(f func(*ctHook)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

// lines returns the lines of the 2xx requests to path, in order.
func (h *ctHook) lines(path string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.reqs {
		if r.path != path || r.code != 200 {
			continue
		}
		for _, o := range r.objects {
			var s string
			json.Unmarshal(o["line"], &s)
			out = append(out, s)
		}
	}
	return out
}

const ctWebhookConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
  token: ` + ctToken + `
  stallAlertMillis: 300
shutdownTimeoutMillis: 500
feeds:
  - name: app
    path: ./in.log
  - name: held
    path: ./held.log
processors:
  - name: hook
    feed: app
    type: webhook
    url: %[1]s/ingest
    batchMaxLines: 3
    headers: {X-Source: tailfeed, X-Team: core}
    onFailure: deadLetter
    retry: {initialMillis: 10, maxMillis: 20, attempts: 2}
  - name: rawhook
    feed: app
    type: webhook
    url: %[1]s/raw
    raw: true
    batchMaxLines: 100
  - name: smallhook
    feed: app
    type: webhook
    url: %[1]s/small
    batchMaxBytes: 400
  - name: holder
    feed: held
    type: webhook
    url: %[1]s/hold
    onFailure: hold
    retry: {initialMillis: 10, maxMillis: 20, attempts: 2}
`

// TestContractWebhookAndDeadLetters: the webhook's requests field by field
// (NDJSON ids, Content-Type, Idempotency-Key, headers, batchMaxLines,
// lineBase64 only with raw: true); a poison line dead-lettered into
// dataDir/dlq/<processor>.jsonl, listed, replayed (lossless again) and
// purged (released, lossy); a hold that stalls a feed, turns /healthz 503
// after stallAlertMillis and makes `status` exit 3, then a release (lossy,
// `status` exit 1) after which the subscriber goes on.
func TestContractWebhookAndDeadLetters(t *testing.T) {
	h := newCtHook(t)
	e := newEnv(t, fmt.Sprintf(ctWebhookConfig, h.srv.URL))
	in := newInput(t, e.path("in.log"))
	in.appendLines(0)
	os.WriteFile(e.path("held.log"), nil, 0o644)
	d := e.start()
	s := ctSample(t, d)

	in.appendLines(6)
	const bad = "bad\xff\xfe\xe2\x82\xed\xa0\x80byte" // invalid bytes, a cut rune, a surrogate
	ctAppend(t, in.path, bad+"\n")
	in.texts = append(in.texts, bad)
	in.ends = append(in.ends, in.size()+int64(len(bad))+1)
	r := ctWait(t, d, "settled", func(r *ctReport) bool { return r.Settled && r.feed(t, "app").Sequence == 7 })
	epoch := r.feed(t, "app").Epoch

	t.Run("NDJSON requests", func(t *testing.T) {
		h.mu.Lock()
		defer h.mu.Unlock()
		n := 0
		for _, req := range h.reqs {
			if req.path != "/ingest" && req.path != "/raw" {
				continue
			}
			if req.method != "POST" || req.header.Get("Content-Type") != "application/x-ndjson" {
				t.Errorf("%s %s Content-Type %q, want POST application/x-ndjson", req.method, req.path, req.header.Get("Content-Type"))
			}
			if req.path == "/ingest" && (req.header.Get("X-Source") != "tailfeed" || req.header.Get("X-Team") != "core") {
				t.Errorf("configured headers missing: %v", req.header)
			}
			if req.path == "/ingest" && len(req.objects) > 3 {
				t.Errorf("a request of %d lines; batchMaxLines is 3", len(req.objects))
			}
			var first, last int64 = -1, -1
			for _, o := range req.objects {
				want := []string{"id", "feed", "epoch", "position", "path", "line"}
				if req.path == "/raw" {
					want = append(want, "lineBase64")
				}
				if len(o) != len(want) {
					t.Errorf("%s object %v: want exactly the fields %v", req.path, keysOf(o), want)
				}
				var id, feed, ep, path, line string
				var pos int64
				json.Unmarshal(o["id"], &id)
				json.Unmarshal(o["feed"], &feed)
				json.Unmarshal(o["epoch"], &ep)
				json.Unmarshal(o["path"], &path)
				json.Unmarshal(o["line"], &line)
				json.Unmarshal(o["position"], &pos)
				i := sort.Search(len(in.ends), func(i int) bool { return in.ends[i] >= pos })
				if i == len(in.ends) || in.ends[i] != pos {
					t.Errorf("object position %d is no line's end", pos)
					continue
				}
				if id != fmt.Sprintf("app:%s:%d", epoch, pos) || feed != "app" || ep != epoch || path != in.path ||
					line != ctJSONText(in.texts[i]) {
					t.Errorf("object %s, want id app:%s:%d, feed app, path %s, line %q", ctJSON(o), epoch, pos, in.path, in.texts[i])
				}
				if req.path == "/raw" {
					var b64 string
					json.Unmarshal(o["lineBase64"], &b64)
					if raw, _ := base64.StdEncoding.DecodeString(b64); string(raw) != in.texts[i] {
						t.Errorf("lineBase64 %q, want the raw bytes %q", b64, in.texts[i])
					}
				}
				if first < 0 {
					first = pos
				}
				last = pos
				n++
			}
			if key := req.header.Get("Idempotency-Key"); key != fmt.Sprintf("app:%s:%d-%d", epoch, first, last) {
				t.Errorf("Idempotency-Key %q, want app:%s:%d-%d", key, epoch, first, last)
			}
		}
		if n != 14 {
			t.Errorf("%d objects in the two webhooks' requests, want 7 each", n)
		}
		small := 0
		for _, req := range h.reqs {
			if req.path == "/small" {
				small += len(req.objects)
				if len(req.body) > 400 {
					t.Errorf("a request body of %d bytes; batchMaxBytes is 400", len(req.body))
				}
			}
		}
		if small != 7 {
			t.Errorf("%d lines in the batchMaxBytes webhook's requests, want 7", small)
		}
	})

	t.Run("status exit 0 while settled and lossless", func(t *testing.T) {
		if out, errOut, code := cli(t, "status", "--addr", d.addr); code != 0 {
			t.Errorf("exit %d, want 0\n%s%s", code, out, errOut)
		}
	})

	ledger := e.path("state/dlq/hook.jsonl")
	t.Run("dead letter, list, replay", func(t *testing.T) {
		ctAppend(t, in.path, "POISON-1\n")
		r := ctWait(t, d, "a dead letter", func(r *ctReport) bool { return r.Settled && r.feed(t, "app").DeadLettered == 1 })
		if f := r.feed(t, "app"); f.Lossless || r.Lossless || f.Pointer.Offset != in.size()+9 {
			t.Errorf("with a dead letter: lossless %v/%v pointer %d; want false, the pointer past it (%d)", f.Lossless, r.Lossless, f.Pointer.Offset, in.size()+9)
		}
		data, err := os.ReadFile(ledger)
		if err != nil {
			t.Fatalf("dataDir/dlq/hook.jsonl: %v", err)
		}
		var entry map[string]any
		if err := json.Unmarshal(bytes.TrimSpace(data), &entry); err != nil {
			t.Fatalf("ledger %q: %v", data, err)
		}
		for _, k := range []string{"feed", "epoch", "position", "attempts", "line"} {
			if _, ok := entry[k]; !ok {
				t.Errorf("ledger entry %s has no %q", data, k)
			}
		}
		if entry["feed"] != "app" || entry["line"] != "POISON-1" || entry["position"] != float64(in.size()+9) || !ctHasKeyLike(entry, "error") || !ctHasKeyLike(entry, "time") {
			t.Errorf("ledger entry %s: want feed app, line POISON-1, position %d, the last error and a time", data, in.size()+9)
		}
		if out, errOut, code := cli(t, "status", "--addr", d.addr); code != 1 {
			t.Errorf("status with a dead letter: exit %d, want 1 (settled but lossy)\n%s%s", code, out, errOut)
		}
		for _, q := range []string{"max=0", "max=10001", "max=x"} {
			ctExpect(t, d, "GET", "/admin/dlq/hook?"+q, ctToken, nil, 400)
		}
		list := ctExpect(t, d, "GET", "/admin/dlq/hook?max=10", ctToken, nil, 200)
		if !bytes.Contains(list, []byte("POISON-1")) {
			t.Errorf("DLQ list %s does not show the entry", list)
		}
		h.set(func(h *ctHook) { h.poison = false })
		ctExpect(t, d, "POST", "/admin/dlq/hook/replay", ctToken, nil, 200)
		r = ctWait(t, d, "the ledger empty", func(r *ctReport) bool { return r.feed(t, "app").DeadLettered == 0 })
		if f := r.feed(t, "app"); !f.Lossless || f.Released != 0 {
			t.Errorf("after a successful replay: lossless %v released %d, want true 0", f.Lossless, f.Released)
		}
		if got := h.lines("/ingest"); len(got) == 0 || got[len(got)-1] != "POISON-1" {
			t.Errorf("the replayed line did not reach the receiver: %q", got)
		}
		h.mu.Lock()
		last := h.reqs[len(h.reqs)-1]
		h.mu.Unlock()
		if len(last.objects) == 1 {
			var pos int64
			var ep string
			json.Unmarshal(last.objects[0]["position"], &pos)
			json.Unmarshal(last.objects[0]["epoch"], &ep)
			if pos != in.size()+9 || ep != epoch {
				t.Errorf("replayed line at (%s, %d), want its original (%s, %d)", ep, pos, epoch, in.size()+9)
			}
		}
		if list := ctExpect(t, d, "GET", "/admin/dlq/hook", ctToken, nil, 200); bytes.Contains(list, []byte("POISON-1")) {
			t.Errorf("DLQ list after the replay still shows the entry: %s", list)
		}
	})
	in.texts = append(in.texts, "POISON-1")
	in.ends = append(in.ends, in.size()+9)

	t.Run("dead letter purged: released, lossy", func(t *testing.T) {
		h.set(func(h *ctHook) { h.poison = true })
		ctAppend(t, in.path, "POISON-2\n")
		ctWait(t, d, "a dead letter", func(r *ctReport) bool { return r.Settled && r.feed(t, "app").DeadLettered == 1 })
		ctExpect(t, d, "DELETE", "/admin/dlq/hook", ctToken, nil, 200)
		r := ctWait(t, d, "the ledger empty", func(r *ctReport) bool { return r.feed(t, "app").DeadLettered == 0 })
		if f := r.feed(t, "app"); f.Lossless || f.Released != 1 {
			t.Errorf("after a purge: lossless %v released %d, want false 1", f.Lossless, f.Released)
		}
		if data, _ := os.ReadFile(ledger); len(bytes.TrimSpace(data)) != 0 {
			t.Errorf("ledger after the purge: %q", data)
		}
	})

	t.Run("hold: stalled, healthz 503, status 3; release", func(t *testing.T) {
		ctAppend(t, e.path("held.log"), "one\n")
		r := ctWait(t, d, "feed held stalled", func(r *ctReport) bool { return r.feed(t, "held").Stalled != nil })
		ctAppend(t, e.path("held.log"), "two\n") // its own request, after the release
		f := r.feed(t, "held")
		if f.Settled || !f.Lossless || f.sub(t, "holder").State == "LIVE" || f.Consumers != 0 {
			t.Errorf("held: settled %v lossless %v holder %+v consumers %d; want not settled, lossless, the subscriber not LIVE, 0 consumers", f.Settled, f.Lossless, f.sub(t, "holder"), f.Consumers)
		}
		var body []byte
		waitUntil(t, "/healthz 503", 20*time.Second, func() bool {
			var code int
			code, _, body = ctDo(t, d, "GET", "/healthz", "", nil)
			return code == 503
		})
		if !bytes.Contains(body, []byte("holder")) && !bytes.Contains(body, []byte("held")) {
			t.Errorf("/healthz 503 body %s does not give the reason", body)
		}
		out, errOut, code := cli(t, "status", "--addr", d.addr, "--wait-settled", "200ms")
		if code != 3 || !strings.Contains(out+errOut, *f.Stalled) {
			t.Errorf("status while stalled: exit %d, want 3 with the stalled reason %q\n%s%s", code, *f.Stalled, out, errOut)
		}
		h.set(func(h *ctHook) { h.hold = false })
		ctExpect(t, d, "POST", "/admin/release/held/holder", ctToken, nil, 200)
		r = ctWait(t, d, "held settled", func(r *ctReport) bool { return r.feed(t, "held").Settled })
		if f := r.feed(t, "held"); f.Lossless || f.Released == 0 || f.Stalled != nil || f.sub(t, "holder").State != "LIVE" {
			t.Errorf("after the release: lossless %v released %d stalled %v holder %+v", f.Lossless, f.Released, f.Stalled, f.sub(t, "holder"))
		}
		if got := h.lines("/hold"); len(got) == 0 || got[len(got)-1] != "two" {
			t.Errorf("after the release the subscriber should go on with the next line; receiver got %q", got)
		}
		waitUntil(t, "/healthz 200", 20*time.Second, func() bool {
			code, _, _ := ctDo(t, d, "GET", "/healthz", "", nil)
			return code == 200
		})
	})
	in.texts = append(in.texts, "POISON-2")
	in.ends = append(in.ends, in.size()+9)

	t.Run("dead letters count across a restart", func(t *testing.T) {
		h.set(func(h *ctHook) { h.poison = true })
		ctAppend(t, in.path, "POISON-3\n")
		ctWait(t, d, "a dead letter", func(r *ctReport) bool { return r.Settled && r.feed(t, "app").DeadLettered == 1 })
		s.finish()
		d.stop()
		d = e.start()
		s = ctSample(t, d)
		r := ctWait(t, d, "settled after the restart", func(r *ctReport) bool { return r.Settled })
		if f := r.feed(t, "app"); f.DeadLettered != 1 || f.Lossless || f.Sequence != 0 {
			t.Errorf("after a restart: deadLettered %d lossless %v sequence %d; want 1 (read from disk), false, 0", f.DeadLettered, f.Lossless, f.Sequence)
		}
	})
	s.finish()
	d.stop()
}

func keysOf(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ctHasKeyLike reports whether m has a non-empty key containing part.
func ctHasKeyLike(m map[string]any, part string) bool {
	for k, v := range m {
		if strings.Contains(strings.ToLower(k), part) && v != nil && v != "" {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------------------
// §7 config and §9 CLI.

// ctDesignConfig is the config block of DESIGN §7 as printed, with the
// listen address and the webhook's URL replaced.
const ctDesignConfig = `dataDir: ./var/state              # LOCK, feeds/<feed>.ptr, dlq/, state/
status: {listen: "{{ADDR}}", token: "", protectRead: false, stallAlertMillis: 60000}
log: {level: info, format: text}  # text | json
shutdownTimeoutMillis: 10000
feeds:
  - name: app                     # [A-Za-z0-9._-]+, unique
    path: ./var/demo/app.log
    readStrategy: COMMITTED       # COMMITED (alias) | EARLIEST | LATEST | ONCE_EARLIEST | ONCE_LATEST
    maxLineBytes: 1048576
    queueCapacity: 1024           # lines per subscriber queue
    queueBytes: 4194304           # bytes per subscriber queue
    maxPendingAcks: 65536
    pollIntervalMillis: 250
    rotateWaitMillis: 5000
    commitSyncMillis: 10
    overload:
      policy: PAUSE               # PAUSE | DROP_AFTER_SPIN | BLOCK_WITH_DEADLINE
      spinBoundMillis: 10
      blockDeadlineMillis: 100
      subscribers: {hook: {policy: DROP_AFTER_SPIN}}   # names a processor below
processors:
  - name: archive                 # unique; also the subscriber queue's name
    feed: app
    type: file                    # file | pull | webhook | count | discard
    match: ""                     # optional RE2; exclude: "" likewise
    path: ./var/out/app.log       # file: output path
    exactlyOnce: false            # file/count: skip re-deliveries by stored (epoch, position)
    fsync: never                  # file: always | interval | never
    fsyncIntervalMillis: 100
    onFailure: hold               # hold | deadLetter
    retry: {initialMillis: 1000, maxMillis: 16000, jitter: 0.2, attempts: 6}
  - name: consumer                # clients poll over HTTP and ACK each delivery
    feed: app
    type: pull
    ackTimeoutMillis: 30000
    maxInFlight: 1000
  - name: hook                    # POSTs batches as NDJSON
    feed: app
    type: webhook
    url: {{URL}}/ingest
    timeoutMillis: 5000
    batchMaxLines: 500
    batchMaxBytes: 1048576
    headers: {X-Source: tailfeed}
`

// TestContractDesignConfig runs the config of §7 as printed, from another
// working directory: every key is accepted, relative paths resolve against
// the config file, and a line reaches the file sink, the pull client and
// the best-effort webhook.
func TestContractDesignConfig(t *testing.T) {
	h := newCtHook(t)
	e := newEnv(t, strings.Replace(ctDesignConfig, "{{URL}}", h.srv.URL, 1))
	if _, errOut, code := cli(t, "validate", "--config", e.cfgWith(freeAddr(t))); code != 0 {
		t.Fatalf("validate of DESIGN §7's config: exit %d: %s", code, errOut)
	}
	os.MkdirAll(e.path("var/demo"), 0o755)
	os.WriteFile(e.path("var/demo/app.log"), nil, 0o644)
	d := ctStart(e, t.TempDir())
	s := ctSample(t, d, "hook")
	ctAppend(t, e.path("var/demo/app.log"), "hello\n")
	code, _, body := ctDo(t, d, "GET", "/v1/pull/consumer?wait=5s", "", nil)
	var p struct{ Events []ctEvent }
	if json.Unmarshal(body, &p); code != 200 || len(p.Events) != 1 || p.Events[0].Line != "hello" {
		t.Fatalf("pull without a token configured: %d %s", code, body)
	}
	ctExpect(t, d, "POST", "/v1/ack", "", ctJSON(map[string]string{"deliveryId": p.Events[0].DeliveryID}), 200)
	r := ctWait(t, d, "settled", func(r *ctReport) bool { return r.Settled && r.Feeds[0].Sequence == 1 })
	f := r.Feeds[0]
	var queues []string
	for _, sub := range f.Subscribers {
		queues = append(queues, sub.Queue)
	}
	sort.Strings(queues)
	if f.Policy != "PAUSE" || strings.Join(queues, ",") != "archive,consumer,hook" || f.Pointer == nil || f.Path != e.path("var/demo/app.log") {
		t.Errorf("policy %s subscribers %v pointer %v path %s", f.Policy, queues, f.Pointer, f.Path)
	}
	if b, _ := os.ReadFile(e.path("var/out/app.log")); string(b) != "hello\n" {
		t.Errorf("var/out/app.log next to the config holds %q", b)
	}
	for _, p := range []string{"var/state/LOCK", "var/state/feeds/app.ptr"} {
		if _, err := os.Stat(e.path(p)); err != nil {
			t.Errorf("%s is not under the config's directory: %v", p, err)
		}
	}
	waitUntil(t, "the webhook got the line", 20*time.Second, func() bool { return len(h.lines("/ingest")) == 1 })
	h.mu.Lock()
	if hdr := h.reqs[0].header.Get("X-Source"); hdr != "tailfeed" {
		t.Errorf("webhook header X-Source %q", hdr)
	}
	h.mu.Unlock()
	s.finish()
	d.stop()
}

// TestContractDefaults: a config with the required keys only takes the
// defaults of §7: dataDir ./var/state next to the config, COMMITTED,
// PAUSE, maxLineBytes 1 MiB.
func TestContractDefaults(t *testing.T) {
	e := newEnv(t, `status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
`)
	long := strings.Repeat("x", 1<<20)
	os.WriteFile(e.path("in.log"), []byte(long+"tail!\nshort\n"), 0o644)
	d := ctStart(e, t.TempDir())
	r := ctWait(t, d, "settled", func(r *ctReport) bool { return r.Settled && r.Feeds[0].Sequence == 3 })
	f := r.Feeds[0]
	if f.Oversized != 1 || f.Pointer == nil || f.Policy != "PAUSE" || f.Bounded {
		t.Errorf("oversized %d pointer %v policy %s bounded %v; want 1 (1 MiB limit), a pointer (COMMITTED), PAUSE, false", f.Oversized, f.Pointer, f.Policy, f.Bounded)
	}
	d.stop()
	if b, _ := os.ReadFile(e.path("out.log")); string(b) != long+"\ntail!\nshort\n" {
		t.Errorf("output of %d bytes, want the 1 MiB piece, the rest and short", len(b))
	}
	if _, err := os.Stat(e.path("var/state/feeds/app.ptr")); err != nil {
		t.Errorf("default dataDir ./var/state next to the config: %v", err)
	}
}

// TestContractConfigErrors: more rejections with FILE:LINE (§7), several
// errors reported at once one per line (§9), and the COMMITED alias.
func TestContractConfigErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, doc, want string }{
		{"feed name characters", strings.Replace(brokenBase, "  - name: app\n", "  - name: app/x #!\n", 1), "app/x"},
		{"bad log format", strings.Replace(brokenBase, "level: info", "level: info\n  format: xml #!", 1), `"xml"`},
		{"unknown status key", strings.Replace(brokenBase, "  listen: 127.0.0.1:1", "  listen: 127.0.0.1:1\n  protectReed: true #!", 1), "protectReed"},
		{"unknown retry key", brokenBase + "    retry:\n      tries: 3 #!\n", "tries"},
		{"bad onFailure", brokenBase + "    onFailure: ignore #!\n", `"ignore"`},
		{"bad retry type", brokenBase + "    retry:\n      jitter: lots #!\n", "jitter"},
		{"bad header map", brokenBase + "  - name: h\n    feed: app\n    type: webhook\n    url: http://127.0.0.1:1/\n    headers: [a] #!\n", "headers"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))
			os.WriteFile(path, []byte(tc.doc), 0o644)
			loc := fmt.Sprintf("%s:%d: ", path, markedLine(t, tc.doc))
			_, stderr, code := cli(t, "validate", "--config", path)
			if code != 2 || !hasLine(stderr, func(l string) bool { return strings.HasPrefix(l, loc) && strings.Contains(l, tc.want) }) {
				t.Errorf("exit %d, stderr %q; want 2 and a line %q…%q", code, stderr, loc, tc.want)
			}
		})
	}
	t.Run("several errors, one per line", func(t *testing.T) {
		doc := strings.Replace(brokenBase, "readStrategy: COMMITTED", "readStrategy: NEVER", 1) +
			"    fsync: sometimes\n  - name: b\n    feed: nope\n    type: discard\n"
		path := filepath.Join(dir, "several.yaml")
		os.WriteFile(path, []byte(doc), 0o644)
		_, stderr, code := cli(t, "validate", "--config", path)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		at := regexp.MustCompile("^" + regexp.QuoteMeta(path) + `:[0-9]+: `)
		n := 0
		for _, l := range lines {
			if at.MatchString(l) {
				n++
			}
		}
		if code != 2 || n < 3 {
			t.Errorf("exit %d, %d FILE:LINE lines, want 2 and one line for each of the 3 errors:\n%s", code, n, stderr)
		}
	})
	t.Run("FILE is the config as named, for dataDir errors too", func(t *testing.T) {
		// Run from the config's directory with a relative --config: every
		// message names the file the same way, "c.yaml:LINE: …".
		sub := t.TempDir()
		os.WriteFile(filepath.Join(sub, "blocker"), []byte("x"), 0o644)
		for name, doc := range map[string]string{
			"enum.yaml":    strings.Replace(brokenBase, "readStrategy: COMMITTED", "readStrategy: NEVER", 1),
			"datadir.yaml": strings.Replace(brokenBase, "dataDir: ./state", "dataDir: ./blocker/state", 1),
		} {
			os.WriteFile(filepath.Join(sub, name), []byte(doc), 0o644)
			for _, cmd := range []string{"validate", "run"} {
				c := exec.Command(bin, cmd, "--config", name)
				c.Dir = sub
				var stderr bytes.Buffer
				c.Stderr = &stderr
				err := c.Run()
				if cmd == "validate" && name == "datadir.yaml" {
					if code := exitCode(err); code != 0 {
						t.Errorf("validate of a config whose dataDir cannot be created: exit %d, want 0 (it checks the file only): %s", code, stderr.String())
					}
					continue
				}
				if code := exitCode(err); code != 2 || !strings.HasPrefix(stderr.String(), name+":") {
					t.Errorf("%s --config %s: exit %d, stderr %q; want 2 and %q", cmd, name, code, stderr.String(), name+":LINE: …")
				}
			}
		}
	})
	t.Run("COMMITED alias", func(t *testing.T) {
		path := filepath.Join(dir, "alias.yaml")
		os.WriteFile(path, []byte(strings.Replace(brokenBase, "COMMITTED", "COMMITED", 1)), 0o644)
		if _, stderr, code := cli(t, "validate", "--config", path); code != 0 {
			t.Errorf("COMMITED: exit %d: %s", code, stderr)
		}
	})
}

// ---------------------------------------------------------------------------
// §4 rotation, truncation, replacement, and the restart after a rotation.

const ctRotationConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
shutdownTimeoutMillis: 1000
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 50
    rotateWaitMillis: 1000
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
  - name: hook
    feed: app
    type: webhook
    url: %s/ingest
`

// TestContractRotation walks one feed through §4's cases with a file sink:
// WAITING_FOR_FILE until the file appears; a rename rotation (the old file
// read to its end first, then the new one from 0 under a new epoch, the
// pointer reset to the new file's key); bytes appended to the old file
// after the switch delivered and counted in `downgraded`; a truncation in
// place (a new epoch, the partial line before it never glued to the new
// bytes); delete and recreate; a same-content copy renamed over the path
// (same epoch, nothing twice); a rotation while stopped (the rotated file's
// unread tail first); and a rotated file gone while stopped (`lostTails`,
// the exact `detail`, lossless false).
func TestContractRotation(t *testing.T) {
	h := newCtHook(t)
	e := newEnv(t, fmt.Sprintf(ctRotationConfig, h.srv.URL))
	defer func() {
		// The webhook got every line once, and no request spans two epochs.
		h.mu.Lock()
		defer h.mu.Unlock()
		var lines []string
		for _, req := range h.reqs {
			epochs := map[string]bool{}
			for _, o := range req.objects {
				var ep, line string
				json.Unmarshal(o["epoch"], &ep)
				json.Unmarshal(o["line"], &line)
				epochs[ep] = true
				lines = append(lines, line+"\n")
			}
			if len(epochs) != 1 {
				t.Errorf("a webhook request spans the epochs %v: %s", epochs, req.body)
			}
		}
		if got, want := strings.Join(lines, ""), "a1\na2\na3\na4\nb1\na5\nc1\nc2\nd1\nd2\ng1\ng2\ng3\nd3\ne1\nf1\n"; got != want {
			t.Errorf("webhook lines %q, want %q", got, want)
		}
	}()
	in, out := e.path("in.log"), e.path("out.log")
	ptr := e.path("state/feeds/app.ptr")
	var want string // the output so far
	var d *daemon
	var s *ctSampler
	// expect waits for the output to be want and the feed settled with the
	// pointer at the end of the file at the path.
	expect := func(t *testing.T, more string) ctFeed {
		t.Helper()
		want += more
		waitUntil(t, fmt.Sprintf("output %q", want), 20*time.Second, func() bool {
			b, _ := os.ReadFile(out)
			return len(b) >= len(want)
		})
		if b, _ := os.ReadFile(out); string(b) != want {
			t.Fatalf("output %q, want %q", b, want)
		}
		st, err := os.Stat(in)
		if err != nil {
			t.Fatal(err)
		}
		r := ctWait(t, d, "settled at the end of the file", func(r *ctReport) bool {
			f := r.Feeds[0]
			return r.Settled && f.Pointer != nil && f.Pointer.Offset == st.Size() && f.Pointer.Epoch == f.Epoch
		})
		return r.Feeds[0]
	}
	// pointerAt checks the pointer file: the epoch, the file key of the
	// file at the path, and no valid slot of another epoch.
	pointerAt := func(t *testing.T, epoch string) {
		t.Helper()
		_, a, b := ctReadPointer(t, ptr)
		n, _, _ := ctNewest(t, a, b)
		if got := fmt.Sprintf("%016x", n.epoch); got != epoch || n.key != ctFileKey(t, in) {
			t.Errorf("pointer epoch %s key %016x, want %s and the file key %016x of the file at the path", got, n.key, epoch, ctFileKey(t, in))
		}
		for i, sl := range []ctSlot{a, b} {
			if sl.why == "" && sl.epoch != n.epoch {
				t.Errorf("slot %c holds the older epoch %016x", 'A'+i, sl.epoch)
			}
		}
	}

	d = e.start()
	s = ctSample(t, d)
	var epoch string
	t.Run("waiting for the file", func(t *testing.T) {
		r := ctWait(t, d, "WAITING_FOR_FILE", func(r *ctReport) bool { return r.Feeds[0].State == "WAITING_FOR_FILE" })
		if f := r.Feeds[0]; !f.Settled || f.Sequence != 0 {
			t.Errorf("no file: settled %v sequence %d, want settled (WAITING_FOR_FILE) and 0", f.Settled, f.Sequence)
		}
		ctAppend(t, in, "a1\na2\n")
		f := expect(t, "a1\na2\n")
		epoch = f.Epoch
		pointerAt(t, epoch)
		if show := ctShow(t, ptr); show["offset"] != "6" {
			t.Errorf("pointer show while the daemon runs (it takes no lock): %v", show)
		}
	})
	t.Run("rename rotation", func(t *testing.T) {
		ctAppend(t, in, "a3\n")
		if err := os.Rename(in, in+".1"); err != nil {
			t.Fatal(err)
		}
		ctAppend(t, in+".1", "a4\n") // written to the old file after the rename
		ctAppend(t, in, "b1\n")
		f := expect(t, "a3\na4\nb1\n")
		if f.Epoch == epoch {
			t.Errorf("epoch %s kept across a rotation; every new file gets a new epoch", f.Epoch)
		}
		epoch = f.Epoch
		pointerAt(t, epoch)
	})
	t.Run("appended to the old file after the switch: downgraded", func(t *testing.T) {
		ctAppend(t, in+".1", "a5\n")
		waitUntil(t, "a5 delivered", 20*time.Second, func() bool {
			b, _ := os.ReadFile(out)
			return string(b) == want+"a5\n"
		})
		want += "a5\n"
		r := ctWait(t, d, "downgraded 1", func(r *ctReport) bool { return r.Feeds[0].Downgraded == 1 && r.Settled })
		if f := r.Feeds[0]; f.Epoch != epoch || f.Pointer.Offset != 3 || !f.Lossless {
			t.Errorf("after a downgraded line: epoch %s pointer %+v lossless %v; want %s, offset 3 (the new file), lossless", f.Epoch, f.Pointer, f.Lossless, epoch)
		}
	})
	t.Run("truncation in place", func(t *testing.T) {
		ctAppend(t, in, "b2") // a partial line, never delivered
		ctWait(t, d, "unterminated 2", func(r *ctReport) bool { return r.Feeds[0].Unterminated == 2 })
		if err := os.Truncate(in, 0); err != nil {
			t.Fatal(err)
		}
		ctAppend(t, in, "c1\n")
		f := expect(t, "c1\n")
		if f.Epoch == epoch {
			t.Errorf("epoch %s kept across a truncation", f.Epoch)
		}
		epoch = f.Epoch
		pointerAt(t, epoch)
	})
	t.Run("delete: read to its end, WAITING_FOR_FILE, recreate", func(t *testing.T) {
		w, err := os.OpenFile(in, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(in); err != nil {
			t.Fatal(err)
		}
		w.WriteString("c2\n") // a writer still appending to the deleted file
		w.Close()
		want += "c2\n"
		waitUntil(t, "c2 from the deleted file", 20*time.Second, func() bool {
			b, _ := os.ReadFile(out)
			return string(b) == want
		})
		r := ctWait(t, d, "WAITING_FOR_FILE after rotateWaitMillis", func(r *ctReport) bool {
			return r.Feeds[0].State == "WAITING_FOR_FILE" && r.Settled
		})
		// Closed with every line acknowledged, the deleted file is
		// forgotten: an empty record under a new epoch (DESIGN §4), so that
		// a restart that cannot find it loses nothing.
		if f := r.Feeds[0]; f.Pointer == nil || f.Pointer.Offset != 0 || f.Pointer.Epoch == epoch {
			t.Errorf("pointer %+v after the deleted file was read to its end, want offset 0 under an epoch other than %s", f.Pointer, epoch)
		}
		ctAppend(t, in, "d1\n")
		f := expect(t, "d1\n")
		if f.Epoch == epoch {
			t.Errorf("epoch %s kept across a delete and recreate", f.Epoch)
		}
		epoch = f.Epoch
		pointerAt(t, epoch)
	})
	t.Run("same content under a new file key while tailing", func(t *testing.T) {
		data, _ := os.ReadFile(in)
		tmp := in + ".tmp"
		os.WriteFile(tmp, append(data, "d2\n"...), 0o644)
		if err := os.Rename(tmp, in); err != nil {
			t.Fatal(err)
		}
		f := expect(t, "d2\n")
		if f.Epoch != epoch {
			t.Errorf("epoch %s after a same-content copy, want %s kept", f.Epoch, epoch)
		}
		pointerAt(t, epoch)
	})
	t.Run("rewritten in place past the old size: caught by the fingerprint", func(t *testing.T) {
		if err := os.WriteFile(in, []byte("g1\ng2\ng3\n"), 0o644); err != nil { // O_TRUNC, then 9 > 6 bytes
			t.Fatal(err)
		}
		f := expect(t, "g1\ng2\ng3\n")
		if f.Epoch == epoch {
			t.Errorf("epoch %s kept although other bytes were written over the file", f.Epoch)
		}
		epoch = f.Epoch
		pointerAt(t, epoch)
	})
	s.finish()
	d.stop()
	// age makes the generations read to their end above look as old as they
	// would be in a real deployment: a restart reads every generation
	// modified within 2 s of its reference (DESIGN §4), a duplicate that this
	// test, fast as it is, would otherwise see.
	age := func(names ...string) {
		old := time.Now().Add(-time.Minute)
		for _, n := range names {
			if err := os.Chtimes(n, old, old); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}

	t.Run("rotation while stopped: the rotated file's tail first", func(t *testing.T) {
		age(in + ".1")
		ctAppend(t, in, "d3\n") // unread: the daemon is stopped
		if err := os.Rename(in, in+".2"); err != nil {
			t.Fatal(err)
		}
		ctAppend(t, in, "e1\n")
		d = e.start()
		s = ctSample(t, d)
		f := expect(t, "d3\ne1\n")
		s.finish()
		d.stop()
		if f.Epoch == epoch || f.LostTails != 0 || !f.Lossless || f.Sequence != 2 {
			t.Errorf("epoch %s (was %s) lostTails %d lossless %v sequence %d; want a new epoch, 0, true, 2", f.Epoch, epoch, f.LostTails, f.Lossless, f.Sequence)
		}
		epoch = f.Epoch
		pointerAt(t, epoch)
	})

	t.Run("rotated file gone while stopped: lostTails", func(t *testing.T) {
		age(in+".1", in+".2")
		ctAppend(t, in, "e2\n") // the unread tail that will be lost
		// The new file gets its inode while the old one still exists, so it
		// cannot reuse it (that would look like a truncation).
		os.WriteFile(in+".new", []byte("f1\n"), 0o644)
		if err := os.Remove(in); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(in+".new", in); err != nil {
			t.Fatal(err)
		}
		d = e.start()
		s = ctSample(t, d)
		f := expect(t, "f1\n")
		s.finish()
		const detail = "rotated file gone; its unread tail is lost"
		if f.LostTails != 1 || f.Lossless || f.Detail == nil || *f.Detail != detail || !strings.Contains(d.log(), "WARN") {
			t.Errorf("lostTails %d lossless %v detail %v WARN %v; want 1, false, %q, a WARN", f.LostTails, f.Lossless, f.Detail, strings.Contains(d.log(), "WARN"), detail)
		}
		d.stop()
	})
}

// TestContractSlowConsumerPausesNotStalls: a pull client that does not
// keep up makes the feed paused (BEHIND, not settled), never stalled; after
// stallAlertMillis /healthz answers 503 with the reason and `status` exits
// 3; once the client catches up the feed settles and /healthz is 200.
func TestContractSlowConsumerPausesNotStalls(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
  token: `+ctToken+`
  stallAlertMillis: 200
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
    queueCapacity: 2
processors:
  - name: puller
    feed: app
    type: pull
    maxInFlight: 3
`)
	in := newInput(t, e.path("in.log"))
	in.appendLines(100)
	d := e.start()
	s := ctSample(t, d)
	first := ctPull(t, d, "puller", "max=1&wait=5s") // out, unacknowledged for now
	r := ctWait(t, d, "paused", func(r *ctReport) bool { return r.Feeds[0].Paused })
	f := r.Feeds[0]
	if f.Stalled != nil || f.Settled || f.State != "BEHIND" || f.Pauses == 0 || f.Consumers != 1 || !f.Lossless {
		t.Errorf("slow client: stalled %v settled %v state %s pauses %d consumers %d lossless %v; want null, false, BEHIND, ≥ 1, 1, true",
			f.Stalled, f.Settled, f.State, f.Pauses, f.Consumers, f.Lossless)
	}
	var body []byte
	waitUntil(t, "/healthz 503", 20*time.Second, func() bool {
		var code int
		code, _, body = ctDo(t, d, "GET", "/healthz", "", nil)
		return code == 503
	})
	if !bytes.Contains(body, []byte("app")) {
		t.Errorf("/healthz 503 body %s does not name the paused feed", body)
	}
	if out, errOut, code := cli(t, "status", "--addr", d.addr); code != 3 {
		t.Errorf("status of a paused feed: exit %d, want 3\n%s%s", code, out, errOut)
	}
	ctAckAll(t, d, first)
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, _ := ctStatus(t, d)
		if r.Settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled while the client keeps up: %+v", r.Feeds[0])
		}
		evs := ctPull(t, d, "puller", "max=100&wait=20ms")
		if len(evs) > 3 {
			t.Fatalf("a pull handed out %d deliveries; maxInFlight is 3", len(evs))
		}
		ctAckAll(t, d, evs)
	}
	r, _ = ctStatus(t, d)
	if f := r.Feeds[0]; f.Paused || f.State != "CAUGHT_UP" || f.Pointer.Offset != in.size() || f.Acknowledged != 100 {
		t.Errorf("caught up: paused %v state %s pointer %+v acknowledged %d", f.Paused, f.State, f.Pointer, f.Acknowledged)
	}
	waitUntil(t, "/healthz 200", 20*time.Second, func() bool {
		code, _, _ := ctDo(t, d, "GET", "/healthz", "", nil)
		return code == 200
	})
	s.finish()
	d.stop()
}

// TestContractBestEffortTap: a DROP_AFTER_SPIN subscriber that never keeps
// up drops lines (counted, lossless false, `status` exit 1) but never holds
// the pointer or `settled`: the file sink next to it gets every line and
// the feed settles with the pointer at the end.
func TestContractBestEffortTap(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
  token: `+ctToken+`
shutdownTimeoutMillis: 300
feeds:
  - name: app
    path: ./in.log
    queueCapacity: 4
    overload:
      subscribers: {tap: {policy: DROP_AFTER_SPIN}}
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
  - name: tap
    feed: app
    type: pull
    maxInFlight: 2
`)
	in := newInput(t, e.path("in.log"))
	in.appendLines(2000)
	d := e.start()
	s := ctSample(t, d, "tap")
	r := ctWait(t, d, "settled", func(r *ctReport) bool { return r.Settled && r.Feeds[0].Sequence == 2000 })
	f := r.Feeds[0]
	if f.Dropped == 0 || f.Lossless || r.Lossless || f.Pointer.Offset != in.size() || f.Acknowledged != 2000 {
		t.Errorf("dropped %d lossless %v/%v pointer %d acknowledged %d; want > 0, false, the pointer at %d, 2000",
			f.Dropped, f.Lossless, r.Lossless, f.Pointer.Offset, f.Acknowledged, in.size())
	}
	if tap := f.sub(t, "tap"); tap.Position+f.Dropped != 2000 {
		t.Errorf("tap: position %d + dropped %d, want 2000 (every line queued or dropped)", tap.Position, f.Dropped)
	}
	if out, errOut, code := cli(t, "status", "--addr", d.addr); code != 1 {
		t.Errorf("status with drops: exit %d, want 1\n%s%s", code, out, errOut)
	}
	s.finish()
	d.stop()
	checkExactlyOnce(t, in, parseOutput(t, in, e.path("out.log")), 2000)
}
