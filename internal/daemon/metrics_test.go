package daemon

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"tailfeed/status"
)

// scrape fetches /metrics and parses it with the Prometheus text parser.
func (e *env) scrape(token string) map[string]*dto.MetricFamily {
	e.t.Helper()
	code, body := e.do(http.MethodGet, "/metrics", token)
	if code != http.StatusOK {
		e.t.Fatalf("/metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		e.t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return fams
}

// value returns the value of family name's series whose labels include
// want (label=value pairs).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	fam, ok := fams[name]
	if !ok {
		t.Fatalf("metric %s missing", name)
	}
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i+1 < len(want); i += 2 {
			if labels[want[i]] != want[i+1] {
				match = false
			}
		}
		if !match {
			continue
		}
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		}
		t.Fatalf("metric %s has type %v", name, fam.GetType())
	}
	t.Fatalf("metric %s has no series with %v", name, want)
	return 0
}

// /metrics parses with the Prometheus text parser and its values agree with
// the feed after a settled run; a paused feed shows its pause.
func TestMetrics(t *testing.T) {
	slow := newBlocker()
	e := start(t, overloadConfig(64, ""), Options{Processors: map[string]Build{"slow": slow.build}})
	e.appendLines(numbered("line-", 0, 300)...)
	e.waitFor("paused", 10*time.Second, func(f status.FeedReport) bool { return f.Paused })
	time.Sleep(20 * time.Millisecond)
	fams := e.scrape("")
	feed := []string{"feed", "app"}
	if value(t, fams, "tailfeed_feed_paused", feed...) != 1 || value(t, fams, "tailfeed_feed_pauses_total", feed...) < 1 ||
		value(t, fams, "tailfeed_feed_paused_seconds_total", feed...) <= 0 {
		t.Fatal("a paused feed's metrics do not show the pause")
	}
	if value(t, fams, "tailfeed_feed_pending_acks", feed...) == 0 || value(t, fams, "tailfeed_feed_commit_lag_lines", feed...) == 0 ||
		value(t, fams, "tailfeed_feed_commit_lag_bytes", feed...) == 0 {
		t.Fatal("a paused feed shows no lag")
	}
	if value(t, fams, "tailfeed_subscriber_queue_depth_lines", "subscriber", "slow") == 0 {
		t.Fatal("the blocked queue shows no depth")
	}
	close(slow.open)
	f := e.waitFor("settled", 20*time.Second, settled)
	fams = e.scrape("")
	size := float64(e.inputSize())
	checks := []struct {
		name string
		want float64
		lbl  []string
	}{
		{"tailfeed_feed_lines_read_total", 300, feed},
		{"tailfeed_feed_bytes_read_total", size, feed},
		{"tailfeed_feed_lines_published_total", 300, feed},
		{"tailfeed_feed_lines_acknowledged_total", 300, feed},
		{"tailfeed_feed_lines_dropped_total", 0, feed},
		{"tailfeed_feed_lines_refused_total", 0, feed},
		{"tailfeed_feed_pending_acks", 0, feed},
		{"tailfeed_feed_commits_total", float64(f.Pointer.Commits), feed},
		{"tailfeed_feed_commit_failures_total", 0, feed},
		{"tailfeed_feed_commit_lag_lines", 0, feed},
		{"tailfeed_feed_commit_lag_bytes", 0, feed},
		{"tailfeed_feed_file_size_bytes", size, feed},
		{"tailfeed_feed_pointer_offset_bytes", size, feed},
		{"tailfeed_feed_paused", 0, feed},
		{"tailfeed_feed_settled", 1, feed},
		{"tailfeed_feed_lossless", 1, feed},
		{"tailfeed_subscriber_lines_dispatched_total", 300, []string{"subscriber", "archive"}},
		{"tailfeed_subscriber_lines_dispatched_total", 300, []string{"subscriber", "slow"}},
		{"tailfeed_subscriber_queue_depth_lines", 0, []string{"subscriber", "slow"}},
		{"tailfeed_subscriber_failures_total", 0, []string{"subscriber", "archive"}},
	}
	for _, c := range checks {
		if got := value(t, fams, c.name, c.lbl...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.lbl, got, c.want)
		}
	}
}

// /metrics is open unless protectRead; with it, the token is needed.
func TestMetricsProtectRead(t *testing.T) {
	for _, protect := range []bool{false, true} {
		cfg := `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0", token: sesame, protectRead: ` + map[bool]string{false: "false", true: "true"}[protect] + `}
feeds:
  - {name: app, path: %DIR%/app.log}
processors:
  - {name: archive, feed: app, type: discard}
`
		e := start(t, cfg, Options{})
		want := http.StatusOK
		if protect {
			want = http.StatusUnauthorized
		}
		for _, path := range []string{"/metrics", "/feed.status"} {
			if code, body := e.do(http.MethodGet, path, ""); code != want {
				t.Errorf("protectRead %v: GET %s without token: %d %s", protect, path, code, body)
			}
			if code, _ := e.do(http.MethodGet, path, "sesame"); code != http.StatusOK {
				t.Errorf("protectRead %v: GET %s with token: %d", protect, path, code)
			}
		}
		if code, _ := e.do(http.MethodPost, "/metrics", "sesame"); code != http.StatusMethodNotAllowed {
			t.Errorf("POST /metrics: %d", code)
		}
		if code, _ := e.do(http.MethodGet, "/healthz", ""); code != http.StatusOK {
			t.Errorf("/healthz must stay open: %d", code)
		}
		e.scrape("sesame")
		e.Stop()
	}
}
