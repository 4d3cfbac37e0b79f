package daemon

import (
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"tailfeed/feed"
	"tailfeed/source/file"
	"tailfeed/status"
)

// GET /metrics serves the Prometheus text format through client_golang's
// registry and handler. The daemon keeps no per-line metric state: a custom
// Collector reads the live atomics of the sources, publishers, queues and
// groups at scrape time, so the hot path pays nothing for metrics.

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
	mLagLines, mLagBytes, mFileSize, mOffset, mState, mReadPos, mDispatched, mPosition, mDepth, mFailures, mSubState}

// collector is the daemon's prometheus.Collector.
type collector struct{ d *Daemon }

// Describe implements prometheus.Collector.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one pass over the live counters.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range c.d.feeds {
		f.collect(ch)
	}
}

func (f *Feed) collect(ch chan<- prometheus.Metric) {
	name := f.cfg.Name
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, name)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
	}
	fr := f.report() // settled/lossless and the summed loss counters, by the report's rules
	src, pub := f.src, f.pub
	readPos := src.ReadPos()
	counter(mLinesRead, float64(src.LinesRead()))
	counter(mBytesRead, float64(src.BytesRead()))
	counter(mPublished, float64(fr.Sequence))
	counter(mDropped, float64(fr.Dropped))
	counter(mRefused, float64(fr.Refused))
	counter(mReleased, float64(fr.Released))
	counter(mPauses, float64(pub.Pauses()))
	counter(mPauseSeconds, pub.PausedTotal().Seconds())
	gauge(mPaused, b2f(pub.Paused()))
	gauge(mStalled, b2f(fr.Stalled != nil))
	gauge(mSettled, b2f(fr.Settled))
	gauge(mLossless, b2f(fr.Lossless))
	for _, st := range feedStates {
		ch <- prometheus.MustNewConstMetric(mState, prometheus.GaugeValue, b2f(fr.State == st), name, st)
	}
	counter(mAcked, float64(fr.Acknowledged))
	gauge(mPending, float64(fr.PendingAcks))
	counter(mCommitFailures, float64(src.CommitFailures()))
	gauge(mLagLines, float64(sub0(src.LinesRead(), src.SyncedSeq())))
	gauge(mReadPos, float64(readPos))
	if st, err := os.Stat(f.cfg.Path); err == nil {
		gauge(mFileSize, float64(st.Size()))
	}
	if f.ptr != nil {
		rec := f.ptr.Record()
		counter(mCommits, float64(rec.Commits))
		gauge(mOffset, float64(rec.Offset))
		lag := readPos - rec.Offset
		if rec.Epoch != src.Epoch() {
			lag = readPos // the pointer still names the previous file
		}
		gauge(mLagBytes, float64(max(lag, 0)))
	}
	for _, g := range f.groups {
		q := g.Queue()
		labels := []string{name, q.Name}
		ack := q.AckPoint()
		if q.BestEffort() {
			ack = q.Finished()
		}
		ch <- prometheus.MustNewConstMetric(mDispatched, prometheus.CounterValue, float64(ack), labels...)
		ch <- prometheus.MustNewConstMetric(mPosition, prometheus.CounterValue, float64(q.Position()), labels...)
		ch <- prometheus.MustNewConstMetric(mDepth, prometheus.GaugeValue, float64(q.Depth()), labels...)
		ch <- prometheus.MustNewConstMetric(mFailures, prometheus.CounterValue, float64(g.Failures()), labels...)
		st, _ := q.State()
		ch <- prometheus.MustNewConstMetric(mSubState, prometheus.GaugeValue, b2f(st == feed.Fenced || st == feed.Dead), labels...)
	}
}

// feedStates are the states tailfeed_feed_state reports, every one each
// scrape (0 or 1), so a query sees a state leave as well as arrive.
var feedStates = func() []string {
	var out []string
	for st := file.Starting; st <= file.Failed; st++ {
		out = append(out, st.String())
	}
	return out
}()

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sub0(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return 0
}

// metricsRoute is GET /metrics: open unless status.protectRead.
func (d *Daemon) metricsRoute() status.Route {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{d})
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return status.Route{
		Methods:  []string{http.MethodGet, http.MethodHead},
		ReadOnly: true,
		Handler:  h.ServeHTTP,
	}
}
