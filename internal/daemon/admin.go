package daemon

import (
	"context"
	"errors"
	"net/http"
	"time"

	"tailfeed/processor"
	"tailfeed/status"
)

// releaseWait bounds how long a release waits for a fenced group to finish
// the attempt it is in (a webhook's timeout, a slow write).
const releaseWait = 30 * time.Second

// ReleaseResult is the body of a successful POST /admin/release.
type ReleaseResult struct {
	Feed       string `json:"feed"`
	Subscriber string `json:"subscriber"`
	Released   uint64 `json:"released"` // lines given up by this call
	Total      uint64 `json:"total"`    // lines given up for this subscriber this run
	State      string `json:"state"`
}

// releaseRoute is POST /admin/release/{feed}/{subscriber}: give a held
// subscriber's backlog up on purpose (DESIGN §5). It needs the token when
// one is set. 404 for an unknown feed or subscriber, 409 for a subscriber
// that is not held (neither fenced nor dead). No body is read.
func (d *Daemon) releaseRoute() status.Route {
	return status.Route{
		Methods:   []string{http.MethodPost},
		Protected: true,
		Handler:   d.release,
	}
}

func (d *Daemon) release(w http.ResponseWriter, r *http.Request) {
	fname, sname := r.PathValue("feed"), r.PathValue("subscriber")
	f := d.feed(fname)
	if f == nil {
		status.WriteError(w, http.StatusNotFound, "no such feed: "+fname)
		return
	}
	g := f.group(sname)
	if g == nil {
		status.WriteError(w, http.StatusNotFound, "feed "+fname+" has no subscriber "+sname)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), releaseWait)
	defer cancel()
	n, err := g.Release(ctx)
	switch {
	case errors.Is(err, processor.ErrNotHeld):
		status.WriteError(w, http.StatusConflict, "subscriber "+sname+" of feed "+fname+" is not held (neither fenced nor dead): nothing to release")
		return
	case err != nil:
		status.WriteError(w, http.StatusServiceUnavailable, "release of "+sname+" did not happen: "+err.Error())
		return
	}
	q := g.Queue()
	st, _ := q.State()
	d.log.Warn("backlog released on purpose", "feed", fname, "subscriber", sname, "lines", n)
	status.WriteJSON(w, http.StatusOK, ReleaseResult{Feed: fname, Subscriber: sname, Released: n,
		Total: q.ReleasedLines(), State: st.String()})
}

func (d *Daemon) feed(name string) *Feed {
	for _, f := range d.feeds {
		if f.cfg.Name == name {
			return f
		}
	}
	return nil
}

func (f *Feed) group(name string) *processor.Group {
	for _, g := range f.groups {
		if g.Name() == name {
			return g
		}
	}
	return nil
}

// waitGroupDone waits until g's goroutine ended, also when a release
// restarted it meanwhile (a new goroutine has a new done channel).
func waitGroupDone(g *processor.Group) {
	done := g.Done()
	for {
		<-done
		next := g.Done()
		if next == done {
			return
		}
		done = next
	}
}
