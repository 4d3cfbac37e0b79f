package pull

import (
	"net/http"
	"strconv"
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
	return New(Config{
		Group:       env.Group,
		AckTimeout:  time.Duration(env.Config.AckTimeoutMillis) * time.Millisecond,
		MaxInFlight: env.Config.MaxInFlight,
	})
}

// routes are the pull API's endpoints; sinkOf finds a subscriber's sink.
func routes(sinkOf func(name string) any) map[string]status.Route {
	h := handlers{sinkOf}
	post := []string{http.MethodPost}
	return map[string]status.Route{
		"/v1/pull/{subscriber}": {Methods: []string{http.MethodGet}, Protected: true, Handler: h.pull},
		"/v1/ack":               {Methods: post, Protected: true, Handler: h.settle("acked", (*Pull).AckAll)},
		"/v1/nack":              {Methods: post, Protected: true, Handler: h.settle("nacked", (*Pull).NackAll)},
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

type pullResponse struct {
	Events []Event `json:"events"`
}

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
	status.WriteJSON(w, http.StatusOK, pullResponse{Events: p.Pull(r.Context(), max, wait, raw)})
}

// settleBody is the body of POST /v1/ack and /v1/nack.
type settleBody struct {
	DeliveryID  *string  `json:"deliveryId"`
	DeliveryIDs []string `json:"deliveryIds"`
}

// settle serves ack (verb "acked") or nack ("nacked") through op.
func (d handlers) settle(verb string, op func(*Pull, []string) (int, []string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body settleBody
		if !status.DecodeBody(w, r, &body) {
			return
		}
		switch {
		case body.DeliveryID != nil && body.DeliveryIDs != nil:
			status.WriteError(w, http.StatusBadRequest, "give deliveryId or deliveryIds, not both")
		case body.DeliveryID != nil && *body.DeliveryID == "":
			status.WriteError(w, http.StatusBadRequest, "deliveryId is empty")
		case body.DeliveryID != nil:
			if n, _ := d.settleIDs([]string{*body.DeliveryID}, op); n == 0 {
				status.WriteError(w, http.StatusNotFound, "unknown deliveryId (not delivered in this run, already acknowledged or nacked, or redelivered since)")
				return
			}
			status.WriteJSON(w, http.StatusOK, map[string]string{"status": verb})
		case body.DeliveryIDs != nil:
			n, unknown := d.settleIDs(body.DeliveryIDs, op)
			status.WriteJSON(w, http.StatusOK, map[string]any{verb: n, "unknown": unknown})
		default:
			status.WriteError(w, http.StatusBadRequest, "body needs deliveryId or deliveryIds")
		}
	}
}

// settleIDs routes ids to their subscribers (named in each id) and returns
// how many op settled and the ids nobody knew, in request order.
func (d handlers) settleIDs(ids []string, op func(*Pull, []string) (int, []string)) (int, []string) {
	bySub := map[string][]string{}
	var subs []string
	for _, id := range ids {
		s := IDSubscriber(id)
		if _, ok := bySub[s]; !ok {
			subs = append(subs, s)
		}
		bySub[s] = append(bySub[s], id)
	}
	bad := map[string]int{} // id → times unknown
	n := 0
	for _, s := range subs {
		p := d.pullSink(s)
		if p == nil {
			for _, id := range bySub[s] {
				bad[id]++
			}
			continue
		}
		k, unknown := op(p, bySub[s])
		n += k
		for _, id := range unknown {
			bad[id]++
		}
	}
	unknown := []string{}
	for _, id := range ids {
		if bad[id] > 0 {
			bad[id]--
			unknown = append(unknown, id)
		}
	}
	return n, unknown
}
