package status

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// A COMMITTED glob feed has no one pointer (FeedMetrics.Pointer nil), yet
// /metrics carries tailfeed_feed_commits_total, summed over its files as
// feed.status pointer.commits is (DESIGN §10 "Status").
func TestGlobCommitsMetric(t *testing.T) {
	fr := FeedReport{Feed: "app", Glob: &GlobSnapshot{Tracked: 2},
		Pointer: &PointerReport{Commits: 7}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector{Metrics{Feeds: func() []FeedMetrics {
		return []FeedMetrics{{Report: fr, FileSize: -1}}
	}}})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "tailfeed_feed_commits_total" {
			if v := f.GetMetric()[0].GetCounter().GetValue(); v != 7 {
				t.Fatalf("tailfeed_feed_commits_total %v, want 7", v)
			}
			return
		}
	}
	t.Fatal("no tailfeed_feed_commits_total for the glob feed")
}
