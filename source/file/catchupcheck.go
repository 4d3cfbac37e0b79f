package file

import (
	"fmt"
	"os"

	"tailfeed/pointer"
)

// LaterGen is a generation a catch-up from an older epoch goes through after
// the catch-up's own (CatchUp.Later; internal/catchup's Gen): its epoch, its
// file's identity when the pointer left it (the pointer's own record for
// the last), End the bytes of it the sinks behind lack, Path for the detail.
type LaterGen struct {
	Epoch   uint64
	FileKey uint64
	FPLen   uint64
	FP      uint64
	End     int64
	Path    string
}

// CountLoss counts a loss the daemon found before Run (a catch-up's sink
// that cannot be placed, or that lost what it had seen): lostTails and
// lostBytes, through OnLoss, WARNed and kept in detail until the next
// restart (DESIGN §4 "Nothing green over a loss").
func (s *Source) CountLoss(tails, bytes, epoch uint64, detail string) {
	s.lose(tails, bytes, epoch, detail)
	s.log.Warn(detail, "path", s.cfg.Path, "epoch", fmt.Sprintf("%016x", epoch))
	s.setDetail(detail)
	s.lostTail = true
}

// CountLoss is Source.CountLoss for a glob feed (its detail: the last such
// loss of the run).
func (g *Glob) CountLoss(tails, bytes, epoch uint64, detail string) {
	g.mu.Lock()
	g.countLossLocked(tails, bytes, epoch, detail)
	g.mu.Unlock()
	g.flushLosses()
}

// countLossLocked counts a loss under mu; its ledger entries wait in lossQ
// for flushLosses (never called under mu: the ledger's writer asks the
// feed for its state).
func (g *Glob) countLossLocked(tails, bytes, epoch uint64, detail string) {
	g.acc.lostTails += tails
	g.acc.lostBytes += bytes
	g.detail = detail
	if tails > 0 {
		g.lossQ = append(g.lossQ, Loss{Counter: "lostTails", Amount: tails, Epoch: epoch, Detail: detail})
	}
	if bytes > 0 {
		g.lossQ = append(g.lossQ, Loss{Counter: "lostBytes", Amount: bytes, Epoch: epoch, Detail: detail})
	}
	g.log.Warn(detail, "epoch", hex16(epoch))
}

// checkLater runs once at open under a catch-up from an older epoch (rec
// is its record): every later generation the epochs file names
// (CatchUp.Later, the pointer's own file last) must be among the files the
// source reads now — f at the path, g (the catch-up's own file), gens (the
// later generations found) — by its first bytes and at least End bytes
// long. One that is not (deleted, truncated or rewritten while stopped) is
// counted: lostTails + 1, lostBytes End, named in detail (DESIGN §11 "a
// generation that is gone is counted").
func (s *Source) checkLater(rec pointer.Record, f *os.File, fdev, fino uint64, g *reader, gens []genFile) {
	c := s.catchUp
	if c == nil || c.Epoch != rec.Epoch || c.laterChecked {
		return
	}
	c.laterChecked = true
	type cand struct {
		key  uint64
		head []byte
		size int64
	}
	var cands []cand
	addFile := func(h *os.File, dev, ino uint64) {
		if h == nil {
			return
		}
		st, err := h.Stat()
		if err != nil {
			return
		}
		b := make([]byte, min(st.Size(), pointer.MaxFingerprint))
		n, _ := h.ReadAt(b, 0)
		cands = append(cands, cand{key: pointer.FileKey(dev, ino), head: b[:n], size: st.Size()})
	}
	addFile(f, fdev, fino)
	if g != nil && g.gz == nil {
		addFile(g.f, g.dev, g.ino)
	}
	for _, gf := range gens {
		if gf.gz {
			cands = append(cands, cand{head: gf.head, size: gf.dsize})
			continue
		}
		head, err := readHead(gf.path)
		st, serr := os.Stat(gf.path)
		if err != nil || serr != nil {
			continue
		}
		cands = append(cands, cand{key: pointer.FileKey(gf.dev, gf.ino), head: head, size: st.Size()})
	}
	for _, m := range c.Later {
		if m.End <= 0 {
			continue // nothing of it was pending
		}
		found := false
		for _, k := range cands {
			if k.size < m.End {
				continue
			}
			if m.FPLen > 0 && headMatches(k.head, m.FPLen, m.FP) || m.FPLen == 0 && m.FileKey != 0 && k.key == m.FileKey {
				found = true
				break
			}
		}
		if found {
			if m.FPLen > 0 {
				if c.laterFound == nil {
					c.laterFound = map[uint64]bool{}
				}
				c.laterFound[m.Epoch] = true
			}
			continue
		}
		d := fmt.Sprintf("%s: the generation read as %s (epoch %016x) is gone, or was truncated or rewritten while stopped; "+
			"its %d bytes are lost for the sinks that lacked them", c.Who, m.Path, m.Epoch, m.End)
		s.CountLoss(1, uint64(m.End), m.Epoch, d)
	}
}
