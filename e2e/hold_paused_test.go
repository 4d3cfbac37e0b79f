package e2e

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestHoldPausesACaughtUpFeed: DESIGN §5 Holds — a fenced pointer-holding
// subscriber "holds the pointer …; the feed pauses reading, reports
// `stalled`" — so `paused` is true (and tailfeed_feed_paused 1) while the
// hold lasts, also when nothing new has come to read (audit 9B: paused
// false until a new line arrived), and false again once it is lifted.
func TestHoldPausesACaughtUpFeed(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	h := aud9AFailHook(t, func(string) bool { return failing.Load() })
	e := newEnv(t, aud9ACfg("", "", aud9AHook("hook", h.srv.URL)))
	in := newInput(t, e.path("in.log"))
	in.appendLines(3)
	d := e.start()
	d.waitFor("stalled by the hook's hold, caught up", 30*time.Second, func(r *report) bool {
		f := r.Feeds[0]
		return f.Stalled != nil && f.Sequence == 3 && f.State == "CAUGHT_UP"
	})
	r := d.waitFor("paused while stalled", 5*time.Second, func(r *report) bool { return r.Feeds[0].Paused })
	if m := aud9AMetric(t, d, `tailfeed_feed_paused{feed="app"}`); m != "1" {
		t.Errorf("stalled (%s), feed.status paused true: tailfeed_feed_paused %q, want 1", *r.Feeds[0].Stalled, m)
	}
	failing.Store(false)
	d.waitFor("settled, no longer paused", 30*time.Second, func(r *report) bool {
		return r.Settled && !r.Feeds[0].Paused && r.Feeds[0].Stalled == nil
	})
	if m := aud9AMetric(t, d, `tailfeed_feed_paused{feed="app"}`); m != "0" {
		t.Errorf("the hold lifted: tailfeed_feed_paused %q, want 0", m)
	}
	d.stop()
}
