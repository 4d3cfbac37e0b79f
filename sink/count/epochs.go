package count

import (
	"fmt"
	"strconv"

	"tailfeed/feed"
)

// Per-epoch applied positions (DESIGN §10 "Sinks and streams"): a glob
// feed's files interleave, so a count keeps, besides the last applied line
// per feed (Feeds), the position after the last applied line of every epoch
// (Epochs: feed → epoch as 16 hex → position), and skips a re-delivered
// line by its own epoch's entry. A single-file feed keeps them too: another
// sink's catch-up from an older generation (DESIGN §11) re-reads lines of
// older epochs. At most maxEpochs entries per
// feed are kept: past that an arbitrary one is dropped (its re-deliveries,
// should any come, are counted again: an overcount, never a miss).

const maxEpochs = 4000

// appliedFor is the position recorded for b's epoch (ok false: none),
// under c.mu.
func (c *Count) appliedFor(b *feed.Batch) (epoch uint64, pos int64, ok bool) {
	m := c.epochs[b.Feed]
	if m == nil {
		return 0, 0, false
	}
	p, ok := m[fmt.Sprintf("%016x", b.Epoch)]
	return b.Epoch, p, ok
}

// noteEpoch records b's last position under its epoch, under c.mu.
func (c *Count) noteEpoch(b *feed.Batch) {
	m := c.epochsOf(b.Feed)
	m[fmt.Sprintf("%016x", b.Epoch)] = b.Done()
	for k := range m {
		if len(m) <= maxEpochs {
			break
		}
		delete(m, k)
	}
}

// epochsOf is feed's per-epoch table, made when it has none.
func (c *Count) epochsOf(feed string) map[string]int64 {
	m := c.epochs[feed]
	if m == nil {
		m = map[string]int64{}
		c.epochs[feed] = m
	}
	return m
}

// seedEpochs makes each feed's last applied line its epoch's entry too (a
// state an older tailfeed wrote kept entries for glob feeds only): an
// older generation's catch-up moving the feed record back must not forget
// it (review 26e B).
func (c *Count) seedEpochs() {
	for f, a := range c.feeds {
		e, err := strconv.ParseUint(a.Epoch, 16, 64)
		if err != nil || e == 0 || a.Position <= 0 {
			continue
		}
		m := c.epochsOf(f)
		if k := fmt.Sprintf("%016x", e); m[k] < a.Position {
			m[k] = a.Position
		}
	}
}

// loadEpochs checks and takes the saved per-epoch positions.
func (c *Count) loadEpochs(path string, saved map[string]map[string]int64) error {
	for f, m := range saved {
		for e := range m {
			if _, err := strconv.ParseUint(e, 16, 64); err != nil || len(e) != 16 {
				return fmt.Errorf("count state %s: feed %s: bad epoch %q", path, f, e)
			}
		}
		c.epochs[f] = m
	}
	return nil
}
