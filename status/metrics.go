package status

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// GET /metrics serves the Prometheus text format through client_golang's
// registry and handler. Nothing keeps per-line metric state: the collector asks for
// a snapshot of the live atomics of the sources, publishers, queues and
// groups at scrape time (Metrics.Feeds), so the hot path pays nothing for
// metrics.

var (
	feedLabels = []string{"feed"}
	subLabels  = []string{"feed", "subscriber"}
)

func desc(name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc("tailfeed_"+name, help, labels, nil)
}

var (
	mLinesRead      = desc("feed_lines_read_total", "Lines read from the input (batched) this run.", feedLabels)
	mBytesRead      = desc("feed_bytes_read_total", "Bytes read from the input this run.", feedLabels)
	mPublished      = desc("feed_lines_published_total", "Lines published to the subscribers this run (the last sequence).", feedLabels)
	mDropped        = desc("feed_lines_dropped_total", "Lines dropped for a DROP_AFTER_SPIN subscriber (per queue and line).", feedLabels)
	mRefused        = desc("feed_lines_refused_total", "Lines refused for a BLOCK_WITH_DEADLINE subscriber (per queue and line).", feedLabels)
	mReleased       = desc("feed_lines_released_total", "Lines given up on purpose (admin release).", feedLabels)
	mPauses         = desc("feed_pauses_total", "Pause episodes: the source stopped reading (full queue, full window, hold, epoch barrier).", feedLabels)
	mPauseSeconds   = desc("feed_paused_seconds_total", "Time spent paused this run.", feedLabels)
	mPaused         = desc("feed_paused", "1 while the feed is paused.", feedLabels)
	mStalled        = desc("feed_stalled", "1 while a pointer-holding subscriber is fenced or dead (a hold).", feedLabels)
	mSettled        = desc("feed_settled", "1 when the feed is settled (see feed.status).", feedLabels)
	mLossless       = desc("feed_lossless", "1 when the feed is lossless (see feed.status).", feedLabels)
	mAcked          = desc("feed_lines_acknowledged_total", "Highest sequence every pointer-holding subscriber finished.", feedLabels)
	mPending        = desc("feed_pending_acks", "Lines published and not yet acknowledged.", feedLabels)
	mCommits        = desc("feed_commits_total", "Pointer records stored (the pointer's commit counter).", feedLabels)
	mCommitFailures = desc("feed_commit_failures_total", "Failed pointer stores, msyncs and resets this run.", feedLabels)
	mLagLines       = desc("feed_commit_lag_lines", "Lines read but not covered by a synced commit.", feedLabels)
	mLagBytes       = desc("feed_commit_lag_bytes", "Bytes between the read position and the pointer offset.", feedLabels)
	mFileSize       = desc("feed_file_size_bytes", "Size of the file at the feed's path (absent when there is none).", feedLabels)
	mOffset         = desc("feed_pointer_offset_bytes", "The pointer's offset (COMMITTED feeds only).", feedLabels)
	mState          = desc("feed_state", "1 for the feed's current state (feed.status state), 0 for the others.", []string{"feed", "state"})
	mReadPos        = desc("feed_read_position_bytes", "Offset read up to in the current file.", feedLabels)

	mDispatched = desc("subscriber_lines_dispatched_total", "The subscriber's ack point: lines finished in queue order.", subLabels)
	mPosition   = desc("subscriber_lines_queued_total", "Lines given to the subscriber's queue this run.", subLabels)
	mDepth      = desc("subscriber_queue_depth_lines", "Lines waiting in the subscriber's queue.", subLabels)
	mFailures   = desc("subscriber_failures_total", "Failed processing attempts.", subLabels)
	mSubState   = desc("subscriber_held", "1 while the subscriber is fenced or dead and holds the pointer.", subLabels)
)

var allDescs = []*prometheus.Desc{mLinesRead, mBytesRead, mPublished, mDropped, mRefused, mReleased, mPauses,
	mPauseSeconds, mPaused, mStalled, mSettled, mLossless, mAcked, mPending, mCommits, mCommitFailures,
	mLagLines, mLagBytes, mFileSize, mOffset, mState, mReadPos, mDispatched, mPosition, mDepth, mFailures, mSubState, mReloads}

// FeedMetrics is one feed at a scrape: its report (settled, lossless and
// the summed loss counters, by the report's rules) and the live values the
// report does not carry, read after it.
type FeedMetrics struct {
	Report         FeedReport
	LinesRead      uint64
	BytesRead      uint64
	Pauses         uint64
	PausedSeconds  float64
	Paused         bool
	CommitFailures uint64
	SyncedSeq      uint64
	ReadPos        int64
	FileSize       int64 // -1 when no file is at the feed's path
	Pointer        *PointerMetrics
	Subscribers    []SubscriberMetrics
}

// PointerMetrics is a COMMITTED feed's pointer at a scrape.
type PointerMetrics struct {
	Commits     uint64
	Offset      int64
	Epoch       uint64 // the pointer's epoch
	SourceEpoch uint64 // the source's: another one means the pointer names the previous file
}

// SubscriberMetrics is one subscriber at a scrape.
type SubscriberMetrics struct {
	Name       string
	Dispatched uint64 // its ack point (a best-effort queue's finished lines)
	Position   uint64
	Depth      int
	Failures   uint64
	Held       bool // fenced or dead
}

// Metrics configures GET /metrics.
type Metrics struct {
	// States are every state tailfeed_feed_state reports, each scrape (0
	// or 1), so a query sees a state leave as well as arrive.
	States []string
	// Feeds snapshots every feed.
	Feeds func() []FeedMetrics
	// Reloads counts successful and failed reloads this run (nil: none
	// reported); both label values exist from the start.
	Reloads func() (ok, failed uint64)
}

// collector is a prometheus.Collector over Metrics.
type collector struct{ m Metrics }

// Describe implements prometheus.Collector.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one pass over the live counters.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range c.m.Feeds() {
		c.collect(ch, f)
	}
	if c.m.Reloads != nil {
		ok, failed := c.m.Reloads()
		ch <- prometheus.MustNewConstMetric(mReloads, prometheus.CounterValue, float64(ok), "ok")
		ch <- prometheus.MustNewConstMetric(mReloads, prometheus.CounterValue, float64(failed), "error")
	}
}

func (c collector) collect(ch chan<- prometheus.Metric, f FeedMetrics) {
	fr := f.Report
	name := fr.Feed
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, name)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
	}
	counter(mLinesRead, float64(f.LinesRead))
	counter(mBytesRead, float64(f.BytesRead))
	counter(mPublished, float64(fr.Sequence))
	counter(mDropped, float64(fr.Dropped))
	counter(mRefused, float64(fr.Refused))
	counter(mReleased, float64(fr.Released))
	counter(mPauses, float64(f.Pauses))
	counter(mPauseSeconds, f.PausedSeconds)
	gauge(mPaused, b2f(f.Paused))
	gauge(mStalled, b2f(fr.Stalled != nil))
	gauge(mSettled, b2f(fr.Settled))
	gauge(mLossless, b2f(fr.Lossless))
	for _, st := range c.m.States {
		ch <- prometheus.MustNewConstMetric(mState, prometheus.GaugeValue, b2f(fr.State == st), name, st)
	}
	counter(mAcked, float64(fr.Acknowledged))
	gauge(mPending, float64(fr.PendingAcks))
	counter(mCommitFailures, float64(f.CommitFailures))
	gauge(mLagLines, float64(Sub0(f.LinesRead, f.SyncedSeq)))
	if fr.Glob == nil {
		// A glob feed has no one current file (DESIGN §10: no per-file
		// label): left out, as its file size and pointer offset are.
		gauge(mReadPos, float64(f.ReadPos))
	}
	if f.FileSize >= 0 {
		gauge(mFileSize, float64(f.FileSize))
	}
	if p := f.Pointer; p != nil {
		counter(mCommits, float64(p.Commits))
		gauge(mOffset, float64(p.Offset))
		lag := f.ReadPos - p.Offset
		if p.Epoch != p.SourceEpoch {
			lag = f.ReadPos // the pointer still names the previous file
		}
		gauge(mLagBytes, float64(max(lag, 0)))
	} else if fr.Glob != nil && fr.Pointer != nil {
		// A glob feed has no one pointer: its commits are summed over
		// its files, as feed.status shows them (DESIGN §10 "Status").
		counter(mCommits, float64(fr.Pointer.Commits))
	}
	collectGlob(ch, name, fr.Glob)
	for _, s := range f.Subscribers {
		labels := []string{name, s.Name}
		ch <- prometheus.MustNewConstMetric(mDispatched, prometheus.CounterValue, float64(s.Dispatched), labels...)
		ch <- prometheus.MustNewConstMetric(mPosition, prometheus.CounterValue, float64(s.Position), labels...)
		ch <- prometheus.MustNewConstMetric(mDepth, prometheus.GaugeValue, float64(s.Depth), labels...)
		ch <- prometheus.MustNewConstMetric(mFailures, prometheus.CounterValue, float64(s.Failures), labels...)
		ch <- prometheus.MustNewConstMetric(mSubState, prometheus.GaugeValue, b2f(s.Held), labels...)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// MetricsRoute is GET /metrics: open unless status.protectRead.
func MetricsRoute(m Metrics) Route {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{m})
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return Route{
		Methods:  []string{http.MethodGet, http.MethodHead},
		ReadOnly: true,
		Handler:  h.ServeHTTP,
	}
}
