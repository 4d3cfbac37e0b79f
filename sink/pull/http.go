package pull

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"time"

	"tailfeed/config"
	"tailfeed/sink"
	"tailfeed/status"
)

// The pull API (DESIGN §6 `pull`, §7 HTTP, §9 Pull API), routes registered
// through sink.Type.Routes:
//
//	GET  /v1/pull/{subscriber}?max=N&wait=D&raw=1
//	     max 1..10000 (default 100), wait a Go duration 0..30s (default 0),
//	     raw a boolean (lineBase64 with the raw bytes) →
//	     200 {"events":[{"deliveryId","feed","epoch","position","sequence","attempt","path","line"}]}
//	POST /v1/ack  {"deliveryId":"…"}   → 200 {"status":"acked"} | 404 {"error":…}
//	     {"deliveryIds":["…",…]}        → 200 {"acked":n,"unknown":[…]}
//	POST /v1/nack {"deliveryId":"…"}   → 200 {"status":"nacked"} | 404 {"error":…}
//	     {"deliveryIds":["…",…]}        → 200 {"nacked":n,"unknown":[…]}
//
// All need the token when one is set. The server checks the token (401),
// then the route and method (404, 405); these handlers then check the
// subscriber (404) and the body or query (413, 400). A body giving both
// deliveryId and deliveryIds, neither, or an empty deliveryId is a 400.
// A deliveryId names its subscriber; an id of an unknown subscriber, an
// earlier run, an acknowledged or a NACKed delivery is unknown (404, or
// listed in "unknown"). Unknown query parameters are ignored.

const (
	maxPullEvents     = 10000
	defaultPullEvents = 100
	maxPullWait       = 30 * time.Second
)

func init() {
	sink.Register("pull", sink.Type{New: open, Routes: routes, Describe: func(pc *config.Processor) []any {
		return []any{"target", "pulled by clients: GET /v1/pull/" + pc.Name}
	}})
}

// open builds a pull subscriber on its group.
func open(env sink.Env) (any, error) {
	prev, _ := env.Previous.(*Pull)
	return New(Config{
		Group:       env.Group,
		AckTimeout:  time.Duration(env.Config.AckTimeoutMillis) * time.Millisecond,
		MaxInFlight: env.Config.MaxInFlight,
		MaxBytes:    env.Feed.QueueBytes,
		Previous:    prev, // a reload restarted the feed: deliveries in flight stay valid
	})
}

// routes are the pull API's endpoints; sinkOf finds a subscriber's sink.
func routes(sinkOf func(name string) any) map[string]status.Route {
	h := handlers{sinkOf}
	post := []string{http.MethodPost}
	return map[string]status.Route{
		"/v1/pull/{subscriber}": {Methods: []string{http.MethodGet}, Protected: true, Handler: h.pull},
		"/v1/ack":               {Methods: post, Protected: true, Handler: h.settle("acked", ackOp)},
		"/v1/nack":              {Methods: post, Protected: true, Handler: h.settle("nacked", nackOp)},
	}
}

type handlers struct {
	sinkOf func(name string) any
}

// pullSink finds the pull subscriber called name (nil when there is none).
func (d handlers) pullSink(name string) *Pull {
	p, _ := d.sinkOf(name).(*Pull)
	return p
}

// Buffers reused across requests: a response (flushed every flushAt
// bytes), the handed-out deliveries, a request body and its ids.
var (
	outBufs  = sync.Pool{New: func() any { return new([]byte) }}
	handouts = sync.Pool{New: func() any { return new([]handed) }}
	inBufs   = sync.Pool{New: func() any { return new([]byte) }}
	idLists  = sync.Pool{New: func() any { return new([][]byte) }}
)

const (
	flushAt = 256 << 10
	keepBuf = 4 << 20 // larger buffers are not kept
)

func (d handlers) pull(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("subscriber")
	p := d.pullSink(name)
	if p == nil {
		status.WriteError(w, http.StatusNotFound, "no pull subscriber "+strconv.Quote(name))
		return
	}
	q := r.URL.Query()
	max := defaultPullEvents
	if q.Has("max") {
		n, err := strconv.Atoi(q.Get("max"))
		if err != nil || n < 1 || n > maxPullEvents {
			status.WriteError(w, http.StatusBadRequest, "max must be an integer from 1 to 10000, not "+strconv.Quote(q.Get("max")))
			return
		}
		max = n
	}
	var wait time.Duration
	if q.Has("wait") {
		v, err := time.ParseDuration(q.Get("wait"))
		if err != nil || v < 0 || v > maxPullWait {
			status.WriteError(w, http.StatusBadRequest, "wait must be a Go duration from 0 to 30s (e.g. 500ms, 10s), not "+strconv.Quote(q.Get("wait")))
			return
		}
		wait = v
	}
	raw := false
	if q.Has("raw") {
		v, err := strconv.ParseBool(q.Get("raw"))
		if err != nil {
			status.WriteError(w, http.StatusBadRequest, "raw must be 1 or 0 (true or false), not "+strconv.Quote(q.Get("raw")))
			return
		}
		raw = v
	}
	hp := handouts.Get().(*[]handed)
	hs := p.take(r.Context(), max, wait, (*hp)[:0])
	writeEvents(w, p.name, hs, raw)
	clear(hs) // no entry kept alive by the pool
	*hp = hs[:0]
	handouts.Put(hp)
}

// writeEvents answers 200 {"events":[…]}, the bytes status.WriteJSON
// wrote for a []Event (encode.go), without building Events.
func writeEvents(w http.ResponseWriter, name string, hs []handed, raw bool) {
	bp := outBufs.Get().(*[]byte)
	buf := append((*bp)[:0], `{"events":[`...)
	w.Header().Set("Content-Type", "application/json")
	enc := newEventEncoder(name)
	streaming := false
	for i := range hs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = enc.appendEvent(buf, &hs[i], raw)
		if len(buf) >= flushAt {
			if !streaming {
				w.WriteHeader(http.StatusOK)
				streaming = true
			}
			w.Write(buf) // a client gone away: its deliveries time out
			buf = buf[:0]
		}
	}
	buf = append(buf, "]}\n"...)
	if !streaming {
		w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
		w.WriteHeader(http.StatusOK)
	}
	w.Write(buf)
	if cap(buf) <= keepBuf {
		*bp = buf[:0]
		outBufs.Put(bp)
	}
}

// settleBody is the body of POST /v1/ack and /v1/nack as encoding/json
// reads it (the bodies parseSettle leaves to it).
type settleBody struct {
	DeliveryID  *string  `json:"deliveryId"`
	DeliveryIDs []string `json:"deliveryIds"`
}

// settleOp settles ids of one subscriber (ack or nack), calling unknown
// with the index of each id it did not know; it returns how many it
// settled.
type settleOp func(p *Pull, ids [][]byte, unknown func(int)) int

func ackOp(p *Pull, ids [][]byte, unknown func(int)) int  { return settle(p, ids, p.ack, unknown) }
func nackOp(p *Pull, ids [][]byte, unknown func(int)) int { return settle(p, ids, p.nack, unknown) }

// settle serves ack (verb "acked") or nack ("nacked") through op.
func (d handlers) settle(verb string, op settleOp) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		bp := inBufs.Get().(*[]byte)
		lp := idLists.Get().(*[][]byte)
		defer func() {
			if cap(*bp) <= keepBuf {
				inBufs.Put(bp)
			}
			clear(*lp)
			idLists.Put(lp)
		}()
		body, ok := status.ReadBody(w, r, (*bp)[:0])
		*bp = body[:0]
		if !ok {
			return
		}
		req, fast := parseSettle(body, *lp)
		if !fast {
			var sb settleBody
			if !status.DecodeJSON(w, body, &sb) {
				return
			}
			req = settleRequest{hasOne: sb.DeliveryID != nil, hasList: sb.DeliveryIDs != nil}
			if req.hasOne {
				req.one = []byte(*sb.DeliveryID)
			}
			for _, id := range sb.DeliveryIDs {
				req.list = append(req.list, []byte(id))
			}
		} else if req.hasList {
			*lp = req.list[:0]
		}
		switch {
		case req.hasOne && req.hasList:
			status.WriteError(w, http.StatusBadRequest, "give deliveryId or deliveryIds, not both")
		case req.hasOne && len(req.one) == 0:
			status.WriteError(w, http.StatusBadRequest, "deliveryId is empty")
		case req.hasOne:
			if n, _ := d.settleIDs([][]byte{req.one}, op); n == 0 {
				status.WriteError(w, http.StatusNotFound, "unknown deliveryId (not delivered in this run, already acknowledged or nacked, or redelivered since)")
				return
			}
			status.WriteJSON(w, http.StatusOK, map[string]string{"status": verb})
		case req.hasList:
			n, bad := d.settleIDs(req.list, op)
			// {"<verb>":n,"unknown":[…]}: status.WriteJSON's bytes for
			// map[string]any{verb: n, "unknown": ids} (keys sorted).
			ob := outBufs.Get().(*[]byte) // not *bp: the ids are views into the body
			out := append((*ob)[:0], `{"`...)
			out = append(out, verb...)
			out = append(out, `":`...)
			out = strconv.AppendInt(out, int64(n), 10)
			out = append(out, `,"unknown":[`...)
			first := true
			for i, id := range req.list {
				if bad != nil && bad[i] {
					if !first {
						out = append(out, ',')
					}
					first = false
					out = appendJSONString(out, id)
				}
			}
			out = append(out, "]}\n"...)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(out)))
			w.WriteHeader(http.StatusOK)
			w.Write(out)
			if cap(out) <= keepBuf {
				*ob = out[:0]
				outBufs.Put(ob)
			}
		default:
			status.WriteError(w, http.StatusBadRequest, "body needs deliveryId or deliveryIds")
		}
	}
}

// settleIDs routes ids to their subscribers (named in each id; a run of
// ids of one subscriber in one call of op) and returns how many op
// settled and which ids nobody knew (bad[i]; nil when none).
func (d handlers) settleIDs(ids [][]byte, op settleOp) (int, []bool) {
	var bad []bool
	mark := func(i int) {
		if bad == nil {
			bad = make([]bool, len(ids))
		}
		bad[i] = true
	}
	n := 0
	for i := 0; i < len(ids); {
		sub := idSubscriber(ids[i])
		j := i + 1
		for j < len(ids) && sameSubscriber(ids[j], sub) {
			j++
		}
		if p := d.pullSink(string(sub)); p == nil {
			for k := i; k < j; k++ {
				mark(k)
			}
		} else {
			at := i
			n += op(p, ids[i:j], func(k int) { mark(at + k) })
		}
		i = j
	}
	return n, bad
}

// sameSubscriber reports whether idSubscriber(id) is sub (sub holds no
// ':'), without searching id.
func sameSubscriber(id, sub []byte) bool {
	if len(sub) == 0 {
		return len(idSubscriber(id)) == 0
	}
	return len(id) > len(sub) && id[len(sub)] == ':' && string(id[:len(sub)]) == string(sub)
}

// idSubscriber is IDSubscriber for the bytes of an id.
func idSubscriber(id []byte) []byte {
	i := bytes.IndexByte(id, ':')
	if i <= 0 {
		return nil
	}
	return id[:i]
}
