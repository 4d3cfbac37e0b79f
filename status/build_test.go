package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// settledFeed is a snapshot of a feed that is settled and lossless: the
// source caught up, its one pointer-holding subscriber drained, every line
// acknowledged and committed, nothing published meanwhile.
func settledFeed() FeedSnapshot {
	return FeedSnapshot{
		Name: "app", Path: "/var/log/app.log", SeqBefore: 10, SeqAfter: 10,
		State: "CAUGHT_UP", SourceDone: true, Policy: "PAUSE",
		Subscribers:  []SubscriberSnapshot{{Queue: "p", Position: 10, Dispatched: 10, State: "LIVE", Consumer: true}},
		Acknowledged: 10,
		Pointer:      &PointerSnapshot{Offset: 100, Epoch: 1, Commits: 3, CommitOK: true, SyncedSeq: 10},
	}
}

// The settled rule (DESIGN §7), one condition at a time: each alone keeps
// a feed from being settled, and none makes it lossy.
func TestBuildSettled(t *testing.T) {
	if fr := Build(settledFeed()); !fr.Settled || !fr.Lossless || !fr.Drained {
		t.Fatalf("settled snapshot: %+v", fr)
	}
	for name, change := range map[string]func(*FeedSnapshot){
		"source behind":         func(s *FeedSnapshot) { s.SourceDone, s.State = false, "BEHIND" },
		"published meanwhile":   func(s *FeedSnapshot) { s.SeqAfter = 11 },
		"queue not drained":     func(s *FeedSnapshot) { s.Subscribers[0].Dispatched = 9 },
		"lines still queued":    func(s *FeedSnapshot) { s.Subscribers[0].Depth = 1 },
		"acks pending":          func(s *FeedSnapshot) { s.PendingAcks = 1 },
		"stalled":               func(s *FeedSnapshot) { s.Subscribers[0].Stalls, s.Subscribers[0].StallReason = true, "p FENCED" },
		"last commit failed":    func(s *FeedSnapshot) { s.Pointer.CommitOK = false },
		"commit behind the ack": func(s *FeedSnapshot) { s.Pointer.SyncedSeq = 9 },
	} {
		s := settledFeed()
		change(&s)
		if fr := Build(s); fr.Settled || !fr.Lossless {
			t.Errorf("%s: settled %v lossless %v, want false, true", name, fr.Settled, fr.Lossless)
		}
	}
}

// A best-effort subscriber does not hold the pointer: its backlog or stall
// leaves the feed settled (but not drained).
func TestBuildBestEffortDoesNotHold(t *testing.T) {
	s := settledFeed()
	s.Subscribers = append(s.Subscribers, SubscriberSnapshot{Queue: "tap", Position: 10, Dispatched: 4,
		BestEffort: true, Stalls: true, StallReason: "tap DEAD", State: "DEAD"})
	fr := Build(s)
	if !fr.Settled || fr.Drained || fr.Stalled != nil || fr.Consumers != 1 {
		t.Fatalf("best-effort backlog: settled %v drained %v stalled %v consumers %d", fr.Settled, fr.Drained, fr.Stalled, fr.Consumers)
	}
}

// The lossless rule: any loss counter, a dead letter or an entry in the
// losses ledger makes a feed lossy; what an operator acknowledged (Base)
// is subtracted first.
func TestBuildLossless(t *testing.T) {
	for name, change := range map[string]func(*FeedSnapshot){
		"dropped":            func(s *FeedSnapshot) { s.Subscribers[0].Dropped = 1 },
		"refused":            func(s *FeedSnapshot) { s.Subscribers[0].Refused = 1 },
		"completionFailures": func(s *FeedSnapshot) { s.Subscribers[0].CompletionFailures = 1 },
		"released":           func(s *FeedSnapshot) { s.Subscribers[0].Released = 1 },
		"deadLettered":       func(s *FeedSnapshot) { s.Subscribers[0].DeadLettered = 1 },
		"lostTails":          func(s *FeedSnapshot) { s.LostTails = 1 },
		"lostBytes":          func(s *FeedSnapshot) { s.LostBytes = 1 },
		"ledgered":           func(s *FeedSnapshot) { s.Ledgered = true },
	} {
		s := settledFeed()
		change(&s)
		if fr := Build(s); fr.Lossless {
			t.Errorf("%s: lossless", name)
		}
	}
	s := settledFeed()
	s.Subscribers[0].Dropped, s.Subscribers[0].Released, s.LostBytes = 5, 2, 7
	s.Base = LossCounters{Dropped: 5, Released: 3, LostBytes: 7}
	if fr := Build(s); !fr.Lossless || fr.Dropped != 0 || fr.Released != 0 || fr.LostBytes != 0 {
		t.Errorf("acknowledged losses: lossless %v dropped %d released %d lostBytes %d", fr.Lossless, fr.Dropped, fr.Released, fr.LostBytes)
	}
}

// The report's JSON: field names are part of the contract; a feed without
// a pointer or a detail says null, and an empty daemon says "feeds":[].
func TestBuildJSON(t *testing.T) {
	s := settledFeed()
	s.Pointer = nil
	s.Subscribers[0].Stalls, s.Subscribers[0].StallReason = true, "a"
	s.Subscribers = append(s.Subscribers, SubscriberSnapshot{Queue: "q", Stalls: true, StallReason: "b"})
	b, _ := json.Marshal(Build(s))
	for _, want := range []string{`"pointer":null`, `"detail":null`, `"stalled":"a; b"`, `"epoch":"0000000000000000"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	if b, _ := json.Marshal(Combine(nil)); string(b) != `{"settled":true,"lossless":true,"version":0,"feeds":[]}` {
		t.Errorf("empty report %s", b)
	}
	r := Combine([]FeedReport{Build(settledFeed()), Build(s)})
	if r.Settled || !r.Lossless {
		t.Errorf("combined: settled %v lossless %v", r.Settled, r.Lossless)
	}
}

func TestHealth(t *testing.T) {
	now := time.Now()
	limit := time.Minute
	ok, why := Health([]HealthSnapshot{
		{Feed: "a", Failed: true, Detail: "permission denied"},
		{Feed: "b", Stalls: []Stall{{Since: now.Add(-time.Second), Reason: "late"}, {Since: now.Add(-2 * time.Minute), Reason: "p DEAD"}}},
		{Feed: "c", PausedSince: now.Add(-2 * time.Minute), PauseReason: "queue q full"},
		{Feed: "d", PausedSince: now.Add(-time.Second), PauseReason: "short"},
	}, limit, now)
	if want := "feed a FAILED: permission denied; feed b stalled: p DEAD; feed c paused: queue q full"; ok || why != want {
		t.Errorf("Health = %v %q, want false %q", ok, why, want)
	}
	if ok, why := Health([]HealthSnapshot{{Feed: "d", PausedSince: now.Add(-time.Second)}}, limit, now); !ok || why != "" {
		t.Errorf("Health of a short pause = %v %q", ok, why)
	}
}

// Ready latches per feed and as a whole: a feed seen open counts as open
// though it fails later, and once ready the feeds are not asked again.
func TestReadinessLatches(t *testing.T) {
	var r Readiness
	feeds := []ReadyFeed{{Feed: "a", State: "CAUGHT_UP", Open: true}, {Feed: "b", State: "STARTING"}}
	if ok, why := r.Check(func() []ReadyFeed { return feeds }); ok || why != "feed b STARTING" {
		t.Fatalf("Check = %v %q", ok, why)
	}
	feeds = []ReadyFeed{{Feed: "a", State: "FAILED"}, {Feed: "b", State: "BEHIND", Open: true}}
	if ok, why := r.Check(func() []ReadyFeed { return feeds }); !ok {
		t.Fatalf("a opened before it failed: Check = %v %q", ok, why)
	}
	if ok, _ := r.Check(func() []ReadyFeed { t.Fatal("asked after it latched"); return nil }); !ok {
		t.Fatal("not ready after it latched")
	}
}
