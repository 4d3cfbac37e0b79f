package daemon

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/feed"
	"tailfeed/internal/datadir"
	"tailfeed/internal/fileutil"
	"tailfeed/source/file"
	"tailfeed/status"
)

// Losses outlive the run (DESIGN §7): every counted loss is also appended to
// dataDir/losses.jsonl, one JSON object per line, fsynced, and a feed is not
// lossless while that ledger holds an entry for it, across restarts.
// DELETE /admin/losses/{feed} is the operator's acknowledgement: it removes
// the feed's entries and zeroes this run's loss counters of the feed in the
// report (through a baseline subtracted from the live counters).
//
// A loss is in the ledger (written and fsynced) before the pointer commits
// past the lines it concerns, and before an operator's release or purge is
// answered. Ways in, none on the hot path:
//   - the source's losses (lostTails, lostBytes) arrive through
//     file.Config.OnLoss, rare events, each appended and fsynced before the
//     source goes on;
//   - the queue and group counters (dropped, refused, completionFailures,
//     released) are plain atomics bumped where the loss happens, before the
//     ack point passes the lines. The feed's publisher acknowledges no
//     lines (PollAcks: what the pointer commits) while a queue noted a loss
//     that the feed's lossSync has not made durable since: it runs
//     lossSync on a goroutine of its own, one at a time, which appends the
//     growth of the feed's counters per subscriber and counter and fsyncs,
//     once for every loss of a burst noted before it started. A release or
//     purge calls it as it counts (Queue.AddReleased), before the ack point
//     moves and the answer goes out. While the ledger cannot be written,
//     the feed acknowledges nothing (logged once).
//   - a recorder appends the same deltas for every feed when the queues
//     note a loss (lossNote), at most once per lossFlushInterval, once more
//     at stop after the last count, and before a report (feed.status,
//     /metrics) is answered: what a report showed is in the ledger — unless
//     the ledger's write or fsync hangs past ledgerWait (a dying disk): the
//     report answers then, from the live counters, and a stop goes on when
//     its share of its bound is over (ledgerStopBy); no pointer passes a
//     loss not made durable either way.
//
// Dead letters are not duplicated here: they have their own ledger.

// lossFile is the ledger's name under dataDir.
const lossFile = datadir.Losses

// lossFormat is the format version each ledger line carries ("v").
const lossFormat = 1

// lossFlushInterval is how often the recorder appends the counters' deltas.
const lossFlushInterval = 100 * time.Millisecond

// LossEntry is one line of losses.jsonl (status.LossEntry).
type LossEntry = status.LossEntry

// lossLedger is dataDir/losses.jsonl. mu serialises appends, rewrites and
// the recorder (and guards f, torn, unsynced, failing and every Feed's
// recorded), so a DELETE sees every delta recorded before it; cmu guards
// only counts (a report records the losses it read first, so it may wait
// for an fsync when there are new ones).
type lossLedger struct {
	mu       sync.Mutex
	path     string
	f        LossFile // O_APPEND
	wrap     func(LossFile) LossFile
	log      hclog.Logger
	torn     bool // the last write failed: the next starts on a new line
	unsynced bool // written and not yet fsynced (a failed fsync): the next sync retries
	failing  bool // the last write or fsync failed (logged once until one succeeds)
	cmu      sync.Mutex
	counts   map[string]int // entries per feed now in the file
	// slowLogged: slow logged since the last successful fsync.
	slowLogged atomic.Bool
}

// LossFile is what the losses ledger appends through: the file, or what
// Options.WrapLossFile makes of it (a test's faults).
type LossFile interface {
	Write(p []byte) (int, error)
	Sync() error
	Close() error
}

// openLossLedger reads the ledger (counting entries per feed) and opens it
// for appending, 0600. A line that does not parse (a torn write after a
// crash) is kept and logged; it names no feed, so it counts for none. wrap
// (nil: none) wraps every file it appends to.
func openLossLedger(dataDir string, log hclog.Logger, wrap func(LossFile) LossFile) (*lossLedger, error) {
	l := &lossLedger{path: datadir.LossesPath(dataDir), counts: map[string]int{}, log: log, wrap: wrap}
	entries, bad, err := l.read()
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		l.counts[e.Feed]++
	}
	if bad > 0 {
		log.Warn("losses ledger has lines that do not parse; they are kept and count for no feed", "path", l.path, "lines", bad)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("losses ledger: %w", err)
	}
	// A torn last line must not swallow the next entry.
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if r, err := os.Open(l.path); err == nil {
			if _, err := r.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
				f.Write([]byte{'\n'})
			}
			r.Close()
		}
	}
	l.f = l.wrapped(f)
	for feed, n := range l.counts {
		log.Warn("feed has losses recorded in an earlier run; it is not lossless until they are acknowledged (DELETE /admin/losses/"+feed+")",
			"feed", feed, "entries", n)
	}
	return l, nil
}

// wrapped is f as the ledger appends through it.
func (l *lossLedger) wrapped(f *os.File) LossFile {
	if l.wrap != nil {
		return l.wrap(f)
	}
	return f
}

// read parses the whole ledger; bad counts the lines that do not parse.
func (l *lossLedger) read() (entries []LossEntry, bad int, err error) {
	b, err := os.ReadFile(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("losses ledger: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e LossEntry
		if json.Unmarshal(line, &e) != nil || e.Feed == "" {
			bad++
			continue
		}
		entries = append(entries, e)
	}
	return entries, bad, sc.Err()
}

// appendLocked writes entries in one write and fsyncs. The entries count
// for their feeds (has) once written, even when the fsync then fails (they
// may be on disk); a failed write leaves them to the live counters. The
// failure is logged and returned (a caller that can still refuse the loss
// does: withdrawLocked).
func (l *lossLedger) appendLocked(entries []LossEntry) error {
	if err := l.writeLocked(entries); err != nil {
		return err
	}
	return l.syncLocked()
}

// writeLocked writes entries in one write, not fsynced yet (syncLocked).
// The entries count for their feeds (has) once written: a failed write
// leaves them to the live counters that show the loss meanwhile (a loss
// its caller then takes back, a refused purge, leaves no trace).
func (l *lossLedger) writeLocked(entries []LossEntry) error {
	if len(entries) == 0 {
		return nil
	}
	written := false
	defer func() {
		if written {
			l.cmu.Lock()
			for _, e := range entries {
				l.counts[e.Feed]++
			}
			l.cmu.Unlock()
		}
	}()
	if l.f == nil {
		return errLossLedgerClosed
	}
	var buf bytes.Buffer
	if l.torn {
		buf.WriteByte('\n') // after a partial write: a line of its own (an empty line is skipped)
	}
	for _, e := range entries {
		b, _ := json.Marshal(e)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	l.unsynced = true // a partial write too: the sync covers what reached the file
	if _, err := l.f.Write(buf.Bytes()); err != nil {
		l.torn = true
		l.failed("append failed; the losses show in this run's counters, and a feed acknowledges nothing until they are written", err)
		return err
	}
	l.torn = false
	written = true
	return nil
}

// syncLocked fsyncs what writeLocked wrote since the last fsync.
func (l *lossLedger) syncLocked() error {
	if !l.unsynced {
		return nil
	}
	if l.f == nil {
		return errLossLedgerClosed
	}
	if err := l.f.Sync(); err != nil {
		l.failed("fsync failed; a feed acknowledges nothing until one succeeds", err)
		return err
	}
	l.unsynced = false
	l.slowLogged.Store(false)
	if l.failing {
		l.failing = false
		l.log.Info("losses ledger: written and fsynced again", "path", l.path)
	}
	return nil
}

// slow logs, once until the ledger is written and fsynced again, that a
// report or a stop went on without waiting for it any longer.
func (l *lossLedger) slow() {
	if l.slowLogged.CompareAndSwap(false, true) {
		l.log.Error("losses ledger: a write or fsync has not returned; reports and stops no longer wait for it (the losses show in the counters; no pointer passes them until they are durable)", "path", l.path)
	}
}

// failed logs a write or fsync failure, once until one succeeds.
func (l *lossLedger) failed(what string, err error) {
	if !l.failing {
		l.failing = true
		l.log.Error("losses ledger: "+what, "path", l.path, "error", err)
	}
}

// errLossLedgerClosed: the daemon closed the ledger (after its stop).
var errLossLedgerClosed = errors.New("losses ledger closed")

// has reports whether the ledger holds an entry for feed.
func (l *lossLedger) has(feed string) bool {
	l.cmu.Lock()
	defer l.cmu.Unlock()
	return l.counts[feed] > 0
}

// clearLocked rewrites the ledger without feed's entries (temp file, fsync,
// rename, directory fsync) and returns how many it removed.
func (l *lossLedger) clearLocked(feed string) (int, error) {
	removed, err := l.rewriteLocked(func(e LossEntry) bool { return e.Feed == feed })
	if err != nil {
		return 0, err
	}
	l.cmu.Lock()
	delete(l.counts, feed)
	l.cmu.Unlock()
	return removed, nil
}

// withdrawLocked removes entries it appended itself (appendLocked) for a
// loss that did not happen after all (a reload rolled back): the same
// feed, counter, amount, time and detail.
func (l *lossLedger) withdrawLocked(entries []LossEntry) error {
	if len(entries) == 0 {
		return nil
	}
	left := map[LossEntry]int{}
	for _, e := range entries {
		left[e]++
	}
	var gone []string // the feeds of the entries found and removed
	_, err := l.rewriteLocked(func(e LossEntry) bool {
		if left[e] > 0 {
			left[e]--
			gone = append(gone, e.Feed)
			return true
		}
		return false
	})
	if err != nil {
		return err // nothing removed: the counts stay
	}
	// Only what was in the file counted (writeLocked counts what it
	// wrote): an append that failed left nothing to take back.
	l.cmu.Lock()
	for _, f := range gone {
		if l.counts[f] > 0 {
			l.counts[f]--
		}
	}
	l.cmu.Unlock()
	return nil
}

// rewriteLocked rewrites the ledger without the entries drop matches
// (temp file, fsync, rename, directory fsync) and returns how many it
// removed.
func (l *lossLedger) rewriteLocked(drop func(LossEntry) bool) (int, error) {
	b, err := os.ReadFile(l.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	var keep bytes.Buffer
	removed := 0
	for _, line := range bytes.SplitAfter(b, []byte{'\n'}) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			continue
		}
		var e LossEntry
		if json.Unmarshal(t, &e) == nil && drop(e) {
			removed++
			continue
		}
		keep.Write(t)
		keep.WriteByte('\n')
	}
	tmp := l.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	if _, err := f.Write(keep.Bytes()); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	f.Close()
	if err := os.Rename(tmp, l.path); err != nil {
		return 0, err
	}
	fileutil.SyncDir(filepath.Dir(l.path))
	nf, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	if l.f != nil {
		l.f.Close()
	}
	l.f = l.wrapped(nf)
	l.torn, l.unsynced = false, false // whole lines, fsynced
	return removed, nil
}

// close closes the ledger's file, waiting ledgerCloseWait at most for a
// write or fsync in flight (a hung one: the close is left to it).
func (l *lossLedger) close() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.f != nil {
			l.f.Close()
			l.f = nil
		}
	}()
	t := time.NewTimer(ledgerCloseWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		l.slow()
	}
}

// lossCounters are one feed's loss counters, summed over its subscribers.
type lossCounters = status.LossCounters

// subLoss is what the recorder last appended for one subscriber's counter.
type subLoss struct{ sub, counter string }

// onLoss is the source's OnLoss: append the loss at once (source goroutine;
// rare).
func (d *Daemon) onLoss(feed string) func(file.Loss) {
	return func(l file.Loss) {
		d.losses.mu.Lock()
		defer d.losses.mu.Unlock()
		d.losses.appendLocked([]LossEntry{{
			V: lossFormat, Feed: feed, Counter: l.Counter, Amount: l.Amount,
			Epoch: status.Hex(l.Epoch), Time: time.Now().UTC().Format(time.RFC3339Nano), Detail: l.Detail,
		}})
	}
}

// recordLosses appends, for every subscriber of every feed, the growth of
// its dropped, refused, completionFailures and released counters since the
// last call, and fsyncs. Only reads atomics: nothing on the hot path waits
// for it.
func (d *Daemon) recordLosses() {
	d.losses.mu.Lock()
	defer d.losses.mu.Unlock()
	d.recordLossesLocked()
}

// ledgerWait bounds how long a report (feed.status, /metrics) waits for
// recordLosses, ledgerStopWait how long a reload's stopped feeds wait for
// the ledger, and a stop waits until ledgerStopBy: an fsync that hangs (a
// dying disk) does not hang them. Past it a report answers from the live counters
// (the loss shows; its entry follows when the fsync returns), and a final
// commit does not pass the losses not made durable (their lines are read
// again at the next start).
const (
	ledgerWait     = time.Second
	ledgerStopWait = 500 * time.Millisecond
	// ledgerStopMargin is what a stop keeps of its bound after the
	// ledger's wait: the final commits, the ledger's close, the listener.
	ledgerStopMargin = 400 * time.Millisecond
	ledgerStopLeast  = 100 * time.Millisecond
	// ledgerCloseWait bounds the ledger's close (closeAll): only a write
	// or fsync that does not return holds it.
	ledgerCloseWait = 100 * time.Millisecond
)

// ledgerStopBy is until when a stop whose bound is hardBy waits for the
// ledger: the bound less ledgerStopMargin, and never less than
// ledgerStopLeast from now (earlier phases that took their whole bound).
func ledgerStopBy(hardBy time.Time) time.Time {
	by := hardBy.Add(-ledgerStopMargin)
	if least := time.Now().Add(ledgerStopLeast); by.Before(least) {
		return least
	}
	return by
}

// recordLossesBy runs recordLosses on a goroutine of its own and waits for
// it until by at most; false when it did not finish (logged once per hang).
// One runs at a time: a caller that finds one running waits for it, then
// runs its own (the one running may have read the counters before the
// caller's report did).
func (d *Daemon) recordLossesBy(by time.Time) bool {
	for {
		d.recMu.Lock()
		ch, ours := d.recFlight, false
		if ch == nil {
			ch, ours = make(chan struct{}), true
			d.recFlight = ch
			go func() {
				d.recordLosses()
				d.recMu.Lock()
				d.recFlight = nil
				d.recMu.Unlock()
				close(ch)
			}()
		}
		d.recMu.Unlock()
		t := time.NewTimer(time.Until(by))
		select {
		case <-ch:
			t.Stop()
			if ours {
				return true
			}
		case <-t.C:
			d.losses.slow()
			return false
		}
	}
}

func (d *Daemon) recordLossesLocked() {
	for _, f := range d.feedList() {
		d.recordFeedLocked(f, nil)
	}
	d.losses.syncLocked()
}

// lossSync is feed f's feed.LossSync: its counters' growth appended and
// fsynced (with whatever else was written and not fsynced yet).
func (d *Daemon) lossSync(f *Feed) feed.LossSync {
	return func() error {
		d.losses.mu.Lock()
		defer d.losses.mu.Unlock()
		if err := d.recordFeedLocked(f, nil); err != nil {
			return err
		}
		return d.losses.syncLocked()
	}
}

// lossCount is feed f's feed.LossCount: the count applied, its growth
// appended and fsynced under the ledger's mu (no recorder runs in
// between); when the append fails, undo takes the count back (nothing of
// it reached the file) and the error is returned. When the fsync fails,
// the count is taken back too if its entry can be taken out of the file
// (takeBack: withdrawn by a rewrite, the recorded mark and the count
// lowered), so that the refused purge, retried, counts its lines once; it
// stays when it cannot (the entry may be on disk: an overcount, never a
// loss unrecorded), as it does when its entry also carries other releases
// counted meanwhile.
func (d *Daemon) lossCount(f *Feed) feed.LossCount {
	return func(sub string, n uint64, apply, undo func()) (func() error, error) {
		d.losses.mu.Lock()
		defer d.losses.mu.Unlock()
		apply()
		var out []recordedLoss
		if err := d.recordFeedLocked(f, &out); err != nil {
			undo()
			return nil, err
		}
		k := subLoss{sub, "released"}
		var mine []LossEntry
		for _, w := range out {
			if w.key == k && w.f == f && w.e.Amount == n {
				mine = append(mine, w.e)
			}
		}
		takeBackLocked := func() error {
			if len(mine) != 1 {
				return errors.New("its losses ledger entry carries other releases too")
			}
			if err := d.losses.withdrawLocked(mine); err != nil {
				return err
			}
			f.recorded[k] -= n
			undo()
			return nil
		}
		if err := d.losses.syncLocked(); err != nil {
			if terr := takeBackLocked(); terr != nil {
				d.log.Error("losses ledger: the count of a refused purge could not be taken back; it stays counted", "feed", f.cfg.Name, "subscriber", sub, "error", terr)
			}
			return nil, err
		}
		return func() error {
			d.losses.mu.Lock()
			defer d.losses.mu.Unlock()
			return takeBackLocked()
		}, nil
	}
}

// syncFinalLosses makes feed f's losses durable before its source's final
// commit (Source.Close), once it stopped publishing and polling, waiting
// until by at most: that
// commit acknowledges past them only when this succeeded (logged when not:
// the pointer then stays before the lines concerned).
func (d *Daemon) syncFinalLosses(f *Feed, by time.Time) {
	var err error
	f.quiet(func() { err = f.pub.SyncLosses(by) })
	if err != nil {
		d.log.Error("losses ledger: the losses of a stopping feed could not be made durable; its final commit does not pass them",
			"feed", f.cfg.Name, "error", err)
	}
}

// recordFeedLocked writes, not fsynced yet, the growth of feed f's
// subscribers' loss counters since they were last written; what a failed
// write did not take is written again by the next call. written (nil: not
// wanted) receives the entries written.
func (d *Daemon) recordFeedLocked(f *Feed, written *[]recordedLoss) error {
	if f.prev != nil {
		// The instance a reload stopped for this one first: its losses
		// precede this one's, and this one's pointer waits for them.
		if err := d.recordFeedLocked(f.prev, written); err != nil {
			return err
		}
		f.prev = nil
	}
	if f.src == nil {
		return nil // not built yet: nothing ran
	}
	var out []LossEntry
	var keys []subLoss
	var vals []uint64
	now := time.Now().UTC().Format(time.RFC3339Nano)
	epoch := status.Hex(f.src.Epoch())
	for _, g := range f.groups {
		q := g.Queue()
		for _, c := range []struct {
			name, what string
			v          uint64
		}{
			{"dropped", "dropped (overload policy DROP_AFTER_SPIN, or left in a best-effort queue at stop)", q.Dropped()},
			{"refused", "refused (overload policy BLOCK_WITH_DEADLINE)", q.Counters.Refused.Load()},
			{"completionFailures", "whose completion was given up after its retries", g.CompletionFailures()},
			{"released", "released on purpose (admin release)", q.ReleasedLines()},
		} {
			k := subLoss{q.Name, c.name}
			if last := f.recorded[k]; c.v > last {
				out = append(out, LossEntry{V: lossFormat, Feed: f.cfg.Name, Counter: c.name, Amount: c.v - last,
					Epoch: epoch, Time: now, Detail: fmt.Sprintf("subscriber %s: %d lines %s", q.Name, c.v-last, c.what)})
				keys, vals = append(keys, k), append(vals, c.v)
			}
		}
	}
	if err := d.losses.writeLocked(out); err != nil {
		return err
	}
	for i, k := range keys {
		f.recorded[k] = vals[i]
		if written != nil {
			*written = append(*written, recordedLoss{f: f, key: k, e: out[i]})
		}
	}
	return nil
}

// recordedLoss is one entry recordFeedLocked wrote: the feed instance and
// the subscriber's counter whose growth it is.
type recordedLoss struct {
	f   *Feed
	key subLoss
	e   LossEntry
}

// runLossRecorder records the losses the queues note (lossNote), at most
// once per lossFlushInterval, until stop is closed. It wakes only when a
// loss was counted: an idle daemon costs it nothing.
func (d *Daemon) runLossRecorder(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-d.lossNote:
		}
		d.recordLosses()
		t := time.NewTimer(lossFlushInterval) // a burst of losses: one append per interval
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// lossBase returns the counters a DELETE acknowledged, to subtract in the
// report.
func (f *Feed) lossBase() lossCounters {
	f.baseMu.Lock()
	defer f.baseMu.Unlock()
	return f.base
}

// acknowledgeLosses clears feed f's ledger entries and makes its report's
// loss counters start from 0 again. Deltas not yet recorded are recorded
// first, and the baseline of the queue counters is what was recorded, so a
// loss counted meanwhile is neither hidden nor lost: it shows in the
// counters and reaches the ledger with the next flush.
func (d *Daemon) acknowledgeLosses(f *Feed) (int, error) {
	// The source's counters are read before the ledger's mu: a glob's take
	// its mu, under which its manager acknowledges (PollAcks), which may
	// take the ledger's mu (lossSync). Each is counted after its entry was
	// appended (onLoss), so those read are in the ledger now.
	lostTails, lostBytes := f.src.LostTails(), f.src.LostBytes()
	d.losses.mu.Lock()
	defer d.losses.mu.Unlock()
	d.recordLossesLocked()
	n, err := d.losses.clearLocked(f.cfg.Name)
	if err != nil {
		return 0, err
	}
	var b lossCounters
	for k, v := range f.recorded {
		switch k.counter {
		case "dropped":
			b.Dropped += v
		case "refused":
			b.Refused += v
		case "completionFailures":
			b.CompletionFailures += v
		case "released":
			b.Released += v
		}
	}
	b.LostTails, b.LostBytes = lostTails, lostBytes
	f.carryInto(&b) // what earlier instances (before a reload) counted
	f.baseMu.Lock()
	f.base = b
	f.baseMu.Unlock()
	return n, nil
}
