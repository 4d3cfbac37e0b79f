package daemon

import (
	"net/http"
	"strconv"
	"time"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/internal/datadir"
	"tailfeed/processor"
	"tailfeed/status"
)

// Remote subscribers (DESIGN §6 `pull`/`webhook`, §7 HTTP, §9 Pull API):
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

// openPull builds a pull subscriber on its group.
func (d *Daemon) openPull(pc *config.Processor, g *processor.Group) (*processor.Pull, error) {
	return processor.NewPull(processor.PullConfig{
		Group:       g,
		AckTimeout:  time.Duration(pc.AckTimeoutMillis) * time.Millisecond,
		MaxInFlight: pc.MaxInFlight,
	})
}

// openWebhook builds a webhook sink on its group; its record is
// dataDir/state/<processor>.rec. It asks the feed's publisher whether the
// source waits for a request it rebuilds after a restart.
func (d *Daemon) openWebhook(pc *config.Processor, g *processor.Group, pub *feed.Publisher) (*processor.Webhook, error) {
	return processor.OpenWebhook(processor.WebhookConfig{
		Group:         g,
		Publisher:     pub,
		URL:           pc.URL,
		Timeout:       time.Duration(pc.TimeoutMillis) * time.Millisecond,
		BatchMaxLines: pc.BatchMaxLines,
		BatchMaxBytes: pc.BatchMaxBytes,
		Headers:       pc.Headers,
		Raw:           pc.Raw,
		Record:        datadir.Record(d.cfg.DataDir, pc.Name),
	})
}

// pullRoutes are the pull API's endpoints.
func (d *Daemon) pullRoutes() map[string]status.Route {
	post := []string{http.MethodPost}
	return map[string]status.Route{
		"/v1/pull/{subscriber}": {Methods: []string{http.MethodGet}, Protected: true, Handler: d.pull},
		"/v1/ack":               {Methods: post, Protected: true, Handler: d.settle("acked", (*processor.Pull).AckAll)},
		"/v1/nack":              {Methods: post, Protected: true, Handler: d.settle("nacked", (*processor.Pull).NackAll)},
	}
}

// pullSink finds the pull subscriber called name (nil when there is none).
func (d *Daemon) pullSink(name string) *processor.Pull {
	for _, f := range d.feeds {
		if g := f.group(name); g != nil {
			p, _ := g.Sink().(*processor.Pull)
			return p
		}
	}
	return nil
}

type pullResponse struct {
	Events []processor.PullEvent `json:"events"`
}

func (d *Daemon) pull(w http.ResponseWriter, r *http.Request) {
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
func (d *Daemon) settle(verb string, op func(*processor.Pull, []string) (int, []string)) http.HandlerFunc {
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
func (d *Daemon) settleIDs(ids []string, op func(*processor.Pull, []string) (int, []string)) (int, []string) {
	bySub := map[string][]string{}
	var subs []string
	for _, id := range ids {
		s := processor.IDSubscriber(id)
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
