package daemon

// Review of the fast pull path (issue 14): real daemon, real HTTP on
// 127.0.0.1, several concurrent clients that ACK, NACK, let deliveries time
// out and ACK late. Invariants checked:
//   - every event is the line its sequence names, at its position;
//   - no (line, attempt) is handed out twice; a line is never out twice at
//     once with two ids that are both accepted (at most one successful ACK
//     per line);
//   - once a redelivery was received, the earlier id of that line is dead;
//   - feed.status `acknowledged` never passes the prefix of lines a client
//     sent an ACK for;
//   - at the end every line was acknowledged and the feed settles at the
//     end of the input.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

const reviewPullConfig = `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: s3cret}
shutdownTimeoutMillis: 300
feeds:
  - {name: app, path: %DIR%/app.log, pollIntervalMillis: 20}
processors:
  - {name: consumer, feed: app, type: pull, ackTimeoutMillis: 250, maxInFlight: 300, retry: {initialMillis: 10, maxMillis: 40, jitter: 0.2, attempts: 100000}}
`

var reviewHTTP = &http.Client{Timeout: 20 * time.Second}

func reviewDo(base, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := reviewHTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

type reviewModel struct {
	mu       sync.Mutex
	lines    []string
	ends     []int64
	seen     map[[2]int]string // (seq, attempt) → id
	lastID   map[int]string    // seq → id of the highest attempt received
	lastAtt  map[int]int
	ackSent  []bool         // an ACK was sent for some id of the line
	ackedBy  map[int]string // seq → the id whose ACK was accepted
	errs     []string
	accepted int
}

func (m *reviewModel) errf(format string, a ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.errs) < 20 {
		m.errs = append(m.errs, fmt.Sprintf(format, a...))
	}
}

func (m *reviewModel) prefixSent() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for n < len(m.ackSent) && m.ackSent[n] {
		n++
	}
	return uint64(n)
}

func TestPullConcurrentClientsNeverLoseOrDoubleAck(t *testing.T) {
	e := start(t, reviewPullConfig, Options{})
	const total = 12000
	lines := numbered("review-line-", 0, total)
	m := &reviewModel{lines: lines, ends: make([]int64, total), seen: map[[2]int]string{}, lastID: map[int]string{},
		lastAtt: map[int]int{}, ackSent: make([]bool, total), ackedBy: map[int]string{}}
	var pos int64
	for i, l := range lines {
		pos += int64(len(l)) + 1
		m.ends[i] = pos
	}
	for i := 0; i < total; i += 2000 {
		e.appendLines(lines[i : i+2000]...)
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			var late []pullEvent
			for {
				select {
				case <-done:
					return
				default:
				}
				max := 1 + rng.IntN(250)
				code, body, err := reviewDo(e.base, "GET", fmt.Sprintf("/v1/pull/consumer?max=%d&wait=100ms", max), nil)
				if err != nil || code != 200 {
					m.errf("pull: %d %s %v", code, body, err)
					return
				}
				var r struct{ Events []pullEvent }
				if err := json.Unmarshal(body, &r); err != nil {
					m.errf("pull body: %v", err)
					return
				}
				var acks, nacks []pullEvent
				var stale []string
				m.mu.Lock()
				for _, ev := range r.Events {
					s := int(ev.Sequence)
					if s < 1 || s > total || ev.Line != lines[s-1] || ev.Position != m.ends[s-1] {
						m.errs = append(m.errs, fmt.Sprintf("event %+v is not line %d", ev, s))
						continue
					}
					k := [2]int{s, ev.Attempt}
					if old, dup := m.seen[k]; dup {
						m.errs = append(m.errs, fmt.Sprintf("line %d attempt %d handed out twice (%s, %s)", s, ev.Attempt, old, ev.DeliveryID))
					}
					m.seen[k] = ev.DeliveryID
					if ev.Attempt > m.lastAtt[s] {
						if prev := m.lastID[s]; prev != "" {
							stale = append(stale, prev)
						}
						m.lastAtt[s], m.lastID[s] = ev.Attempt, ev.DeliveryID
					}
					switch x := rng.IntN(100); {
					case x < 70:
						acks = append(acks, ev)
						m.ackSent[s-1] = true
					case x < 80:
						nacks = append(nacks, ev)
					default:
						late = append(late, ev)
					}
				}
				m.mu.Unlock()
				// An id superseded by a redelivery we hold must be dead.
				for _, id := range stale {
					b, _ := json.Marshal(map[string]string{"deliveryId": id})
					code, body, _ := reviewDo(e.base, "POST", "/v1/ack", b)
					if code != http.StatusNotFound {
						m.errf("ACK of superseded id %s answered %d %s", id, code, body)
					}
				}
				if len(nacks) > 0 {
					for _, ev := range nacks {
						b, _ := json.Marshal(map[string]string{"deliveryId": ev.DeliveryID})
						reviewDo(e.base, "POST", "/v1/nack", b)
					}
				}
				// Late ACKs of some timed-out deliveries.
				if len(late) > 50 || (len(late) > 0 && rng.IntN(10) == 0) {
					time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
					acks = append(acks, late...)
					m.mu.Lock()
					for _, ev := range late {
						m.ackSent[ev.Sequence-1] = true
					}
					m.mu.Unlock()
					late = nil
				}
				if len(acks) == 0 {
					continue
				}
				ids := make([]string, len(acks))
				for i, ev := range acks {
					ids[i] = ev.DeliveryID
				}
				b, _ := json.Marshal(map[string]any{"deliveryIds": ids})
				code, body, err = reviewDo(e.base, "POST", "/v1/ack", b)
				if err != nil || code != 200 {
					m.errf("ACK: %d %s %v", code, body, err)
					return
				}
				var ar struct {
					Acked   int      `json:"acked"`
					Unknown []string `json:"unknown"`
				}
				if err := json.Unmarshal(body, &ar); err != nil || ar.Acked+len(ar.Unknown) != len(ids) {
					m.errf("ACK answer %s for %d ids: %v", body, len(ids), err)
					return
				}
				bad := map[string]bool{}
				for _, id := range ar.Unknown {
					bad[id] = true
				}
				m.mu.Lock()
				for _, ev := range acks {
					if bad[ev.DeliveryID] {
						continue
					}
					s := int(ev.Sequence)
					if prev, twice := m.ackedBy[s]; twice {
						m.errs = append(m.errs, fmt.Sprintf("line %d acknowledged twice: by %s and %s", s, prev, ev.DeliveryID))
					}
					m.ackedBy[s] = ev.DeliveryID
					m.accepted++
				}
				m.mu.Unlock()
			}
		}()
	}

	// Watch the ack point against what clients sent.
	deadline := time.Now().Add(90 * time.Second)
	for {
		sent := m.prefixSent()
		r := e.report()
		f := r.Feeds[0]
		// acknowledged is read after sent: an ACK sent after sent was
		// read can move it, so re-read sent to bound the race.
		if f.Acknowledged > m.prefixSent() {
			m.errf("acknowledged %d passes the prefix of lines any client ACKed (%d..%d)", f.Acknowledged, sent, m.prefixSent())
		}
		m.mu.Lock()
		all := len(m.ackedBy) == total
		nerr := len(m.errs)
		m.mu.Unlock()
		if all || nerr > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(done)
	wg.Wait()
	m.mu.Lock()
	errs := m.errs
	got := len(m.ackedBy)
	m.mu.Unlock()
	if len(errs) > 0 {
		t.Fatalf("%d problems:\n%s", len(errs), strings.Join(errs, "\n"))
	}
	if got != total {
		t.Fatalf("%d of %d lines acknowledged", got, total)
	}
	f := e.waitFor("settled", 10*time.Second, settled)
	if f.Pointer.Offset != e.inputSize() || f.PendingAcks != 0 || f.Acknowledged != total {
		t.Fatalf("settled with pointer %+v, pendingAcks %d, acknowledged %d", f.Pointer, f.PendingAcks, f.Acknowledged)
	}
}
