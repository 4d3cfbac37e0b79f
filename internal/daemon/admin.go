package daemon

import (
	"context"

	"tailfeed/processor"
	"tailfeed/status"
)

// admin is the daemon's side of the admin endpoints (status.Admin).
type admin struct{ d *Daemon }

func (a admin) Subscriber(feed, name string) (status.Releasable, bool) {
	f := a.d.feed(feed)
	if f == nil {
		return nil, false
	}
	if h := f.activeHold(name); h != nil {
		return heldRelease{a.d, f, h}, true
	}
	if g := f.group(name); g != nil {
		return releasable{g}, true
	}
	return nil, true
}

func (a admin) DeadLetters(name string) status.DeadLetters {
	g := a.d.processorGroup(name)
	if g == nil {
		if l := a.d.orphans.get(name); l != nil {
			return orphanDLQ{a.d, name, l} // a removed processor's (orphans.go)
		}
	}
	if g == nil || g.Ledger() == nil {
		return nil
	}
	return deadLetters{g}
}

func (a admin) HasFeed(feed string) bool { return a.d.feed(feed) != nil }

func (a admin) Losses(feed string) ([]status.LossEntry, error) {
	a.d.losses.mu.Lock()
	entries, _, err := a.d.losses.read()
	a.d.losses.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var out []status.LossEntry
	for _, e := range entries {
		if e.Feed == feed {
			out = append(out, e)
		}
	}
	return out, nil
}

func (a admin) AcknowledgeLosses(feed string) (int, error) {
	return a.d.acknowledgeLosses(a.d.feed(feed))
}

// releasable is a group as status.Releasable.
type releasable struct{ g *processor.Group }

func (r releasable) Release(ctx context.Context) (uint64, error) { return r.g.Release(ctx) }
func (r releasable) ReleasedLines() uint64                       { return r.g.Queue().ReleasedLines() }
func (r releasable) State() string {
	st, _ := r.g.Queue().State()
	return st.String()
}

// deadLetters is a group's dead-letter ledger as status.DeadLetters.
type deadLetters struct{ g *processor.Group }

func (l deadLetters) Name() string { return l.g.Name() }
func (l deadLetters) List(max int) ([]processor.LedgerItem, int) {
	return l.g.Ledger().List(max)
}
func (l deadLetters) Len() int { return l.g.Ledger().Len() }

// Purge removes up to max entries; the group counts them as released.
func (l deadLetters) Purge(max int) (int, error) { return l.g.PurgeDeadLetters(max) }

func (l deadLetters) Replay(ctx context.Context, max int) (processor.ReplayResult, error) {
	return l.g.Replay(ctx, max)
}

func (d *Daemon) feed(name string) *Feed {
	for _, f := range d.feedList() {
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

// processorGroup finds the group of a processor by name.
func (d *Daemon) processorGroup(name string) *processor.Group {
	for _, f := range d.feedList() {
		if g := f.group(name); g != nil {
			return g
		}
	}
	return nil
}
