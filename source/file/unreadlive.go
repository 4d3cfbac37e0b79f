package file

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"

	"tailfeed/pointer"
)

// The unread list kept while running (unreadListName). The stop's list
// (Close) is exact; a kill -9 writes nothing at its end, so the list is
// also kept while running: a file in the glob waiting for a slot (its
// stream never started in this run) is named in it by the scan that finds
// it or the next housekeeping pass (listAtOnce). An entry is
// dropped once its file has a pointer (or is gone, counted by the glob;
// one renamed out of the glob while it waits, read beside the path it
// left, stays named under that path: leftBeside). A restart after a kill
// -9 then finds such a file beside its path, or counts it deleted while
// tailfeed was down, as after a stop. What it cannot see: a file found and
// renamed out of the glob or deleted between its scan and the list's
// write, a kill -9 in between (not listed yet); a file born and rotated
// away while tailfeed was down at a path whose earlier files were never
// read (no pointer names that path's files: see the README); and
// lostBytes short of what a listed file grew by since the last write
// (sizes are written again at most every unreadListResize). A listed file
// that got its pointer just before the kill is not counted: the start
// skips an entry whose key a pointer names. One deleted while running and
// counted then, the kill coming before the list drops it, counts again at
// the restart (an overcount, not a gap).

// unreadListDelay paces the list's writes for entries not listed at once
// (listAtOnce): a file whose first bytes could not be read is tried again
// this long after.
const unreadListDelay = time.Second

// unreadListResize: how often the list is written again only because a
// listed file grew.
const unreadListResize = 5 * time.Second

// liveUnread is the running list's state (manager goroutine, under mu).
type liveUnread struct {
	written map[uint64]unreadEntry // the list on disk, by key
	fps     map[uint64]liveHead    // first bytes looked at for an entry
	// noHead: the entries whose first bytes the last write could not read
	// (left out of it): not listed at once again, or every pass would
	// write the whole list for them; retried every unreadListDelay.
	noHead   map[uint64]*gstream
	pending  time.Time // since when an addition waits to be written
	lastSize time.Time // the last write for growth alone
	// startDone: the first scan wrote its list (startUnreadLocked); stale:
	// the file on disk still holds the previous run's entries too.
	startDone, stale bool
}

// liveHead is the first bytes looked at for a listed stream's file.
type liveHead struct {
	s     *gstream
	n, fp uint64
}

// waitingNow is every tracked file in the glob never read, with no pointer
// and bytes seen — the list's entries while running (no loss counted: the
// glob counts a waiting file found deleted). Also a listed stream started
// since whose new pointer names no file yet (unadopted): until its
// "adopted" line is on disk, a kill -9 leaves nothing else naming its file
// (the pointer file removed as never written). Under mu.
func (g *Glob) waitingNow() []unreadEntry {
	var out []unreadEntry
	for k, s := range g.byKey {
		if k != s.key {
			continue
		}
		if s.listed != nil {
			// The previous run's entry, as it was (its path, key and
			// first bytes: a restart finds the file beside that path
			// again), until this run's pointer names the file.
			if !s.touched && (s.src == nil || unadopted(s)) {
				out = append(out, *s.listed)
			}
			continue
		}
		if s.gone && !g.leftBeside(s) {
			continue
		}
		if s.ptrPath != "" || s.st == stOpen || s.st == stStopping {
			if !g.listedLive(k) || !unadopted(s) || !g.unread(s) {
				continue
			}
		} else if !g.unread(s) {
			continue
		}
		if n := g.seenEnd(s); n > 0 {
			w := unreadEntry{Key: s.key, Size: n, Path: s.path, s: s}
			if s.gone {
				// Left the glob while it waited, read beside the path it
				// left (leftBeside): listed under that path, as before,
				// so that a restart after a kill -9 finds it beside it
				// (followed there when renamed again meanwhile).
				g.followBeside(s) // (not found: listed as it was; back in the glob: the scan takes it)
				w.Path, w.head = besidePath(s), s.path
			}
			out = append(out, w)
		}
	}
	out = append(out, g.handedEntries()...)
	return append(out, g.ownOutEntries()...)
}

// unadopted: s's source, started in this run, has not opened its pointer
// yet, or opened a new one that no Adopt has named a file in
// (pointer.Unadopted). Never started in this run, its pointer file (if
// any) is a previous run's, on disk. Under mu (src.ptr is set under it).
func unadopted(s *gstream) bool {
	return s.src != nil && (s.src.ptr == nil || s.src.ptr.Unadopted())
}

// startUnreadLocked writes, in the first scan before any stream starts,
// the unread list of every file that scan found with bytes and nothing on
// disk naming it (the streams it queues, none started yet):
// a kill -9 within unreadListDelay of the start, before a stream's first
// open, left no trace of its file, and one rotated or deleted while
// tailfeed was down had its lines never read and nothing counted (the kill
// -9 property run, seed 1796536884841194830: a.log's first 8 lines,
// lossless true; thirty-first session). The previous run's entries are
// kept in it, before these (countUnreadGone reads them after the scan,
// these skipped as found in the glob, and writes the list again without
// them; stale until then). Under mu (one write at the start, the scan
// waits for it).
func (g *Glob) startUnreadLocked() {
	lu := &g.live
	if lu.startDone || g.cfg.PointerDir == "" || g.final {
		return
	}
	lu.startDone = true
	keep := g.liveHeads(g.waitingNow())
	if len(keep) == 0 {
		return
	}
	path := filepath.Join(g.cfg.PointerDir, unreadListName)
	var b bytes.Buffer
	if old, err := os.ReadFile(path); err == nil && len(old) > 0 {
		b.Write(old)
		if old[len(old)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	for _, w := range keep {
		if line, err := json.Marshal(w); err == nil {
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	if err := storeList(path, b.Bytes()); err != nil {
		g.log.Error("cannot write the glob's unread list at the start: a file never read and rotated or deleted while stopped after a kill -9 will not be counted",
			"path", path, "error", err)
		return
	}
	lu.written = make(map[uint64]unreadEntry, len(keep))
	for _, w := range keep {
		lu.written[w.Key] = w
	}
	lu.stale = true
}

// ownOutEntries are the unread list's entries (Out) of the own files out of
// the glob (ownOut), with their stream's first path and pointer. Under mu.
func (g *Glob) ownOutEntries() []unreadEntry {
	var out []unreadEntry
	for k, s := range g.byKey {
		if k == s.key && g.ownOut(s) {
			if n := g.seenEnd(s); n > 0 {
				out = append(out, unreadEntry{Key: s.key, Size: n, Path: s.ownAt, Out: true, First: s.first, Ptr: s.ptrPath, s: s})
			}
		}
	}
	return out
}

// ownOut: s's own file left the glob for s.ownAt before its source reached
// it: no pointer names it, so the unread list does (Out) — while running
// for a kill -9, and at the stop — and the next start reads it as a later
// generation of the pointer's file or counts it, as it finds it then
// (countUnreadGone). Under mu.
func (g *Glob) ownOut(s *gstream) bool {
	return s.gone && s.ownAt != "" && !s.ownRead && g.ownAfterGone(s) && !g.matched(s.ownAt)
}

// liveUnreadDue decides, at a housekeeping pass, whether the list on disk
// must be written again, and returns what to write (ok false: nothing to
// do). Under mu.
func (g *Glob) liveUnreadDue(now time.Time) ([]unreadEntry, bool) {
	if g.cfg.PointerDir == "" || g.final {
		return nil, false
	}
	lu := &g.live
	cur := g.waitingNow()
	// urgent: an own file out of the glob (ownOut) is listed at once, not
	// after unreadListDelay: it is rare, and it waits for nothing to come.
	added, dropped, grown, urgent := false, false, false, false
	for _, w := range cur {
		old, ok := lu.written[w.Key]
		switch {
		case !ok && listAtOnce(w) && lu.noHead[w.Key] != w.s:
			urgent = true
		case !ok:
			added = true
		case old.Path != w.Path || old.Out != w.Out:
			urgent = true // an own file that left the glob (ownOut), or came back
		case old.s != w.s:
			// Its key now another file's (inode reuse): the entry on
			// disk names the old file's first bytes, at once replaced.
			dropped = true
		case old.Size != w.Size:
			grown = true
		}
	}
	if len(lu.written) > len(cur) || lu.stale {
		// (stale: the start's list still holds the previous run's
		// entries, startUnreadLocked.)
		dropped = true
	} else if !added {
		// Same count, none added: nothing dropped either.
	} else {
		keys := make(map[uint64]bool, len(cur))
		for _, w := range cur {
			keys[w.Key] = true
		}
		for k := range lu.written {
			if !keys[k] {
				dropped = true
				break
			}
		}
	}
	if !added {
		lu.pending = time.Time{}
	} else if lu.pending.IsZero() {
		lu.pending = now
	}
	switch {
	case dropped || urgent:
		// At once: a listed file that got its pointer (a restart would
		// find it by the pointer anyway) or was counted gone.
	case added && now.Sub(lu.pending) >= unreadListDelay:
	case grown && now.Sub(lu.lastSize) >= unreadListResize:
	default:
		return nil, false
	}
	if added && now.Sub(lu.pending) < unreadListDelay {
		// Written now for a drop or growth: the additions still wait.
		cur = slices.DeleteFunc(cur, func(w unreadEntry) bool {
			_, ok := lu.written[w.Key]
			return !ok && (!listAtOnce(w) || lu.noHead[w.Key] == w.s)
		})
	} else {
		lu.pending = time.Time{}
	}
	if grown {
		lu.lastSize = now
	}
	return cur, true
}

// listAtOnce: w is named in the list at the first pass that sees it, not
// after unreadListDelay — an own file out of the glob (Out), and a file
// waiting for a slot whose stream never started in this run (queued, or
// renamed out of the glob while queued: leftBeside), which is every new
// entry: waitingNow names a started stream only while the list already
// does. A queued file waits for a slot as long as the open streams keep
// them, and a rotation while tailfeed is down renames it out of the glob
// with nothing on disk naming it: under a kill -9 every 1–2 s and
// rotations every 350 ms, the delay left whole generations of a writer
// waiting behind busier ones never listed, never read and never counted
// (aud7 C, seed 1796559392325910795: 9 of w2's 17 generations, lossless
// true). A start with a thousand new files writes its list once, at its
// first scan (startUnreadLocked). unreadListDelay now paces only the
// retries of an entry whose first bytes could not be read (noHead) and a
// previous run's entry the start could not write.
func listAtOnce(w unreadEntry) bool {
	return w.Out || (w.s != nil && w.s.src == nil && w.s.listed == nil)
}

// liveUnreadNow writes the running list when a scan changed it in a way
// that cannot wait for the next housekeeping pass (listAtOnce): the scan
// that finds a new file queued behind the open ones lists it at once.
// Manager goroutine.
func (g *Glob) liveUnreadNow() {
	g.mu.Lock()
	if !g.started {
		g.mu.Unlock()
		return
	}
	list, write := g.liveUnreadDue(time.Now())
	g.mu.Unlock()
	if write {
		g.writeLiveUnread(list)
	}
}

// writeLiveUnread writes the running list (manager goroutine, without
// mu; after liveUnreadDue) and records what it holds.
func (g *Glob) writeLiveUnread(ws []unreadEntry) {
	lu := &g.live
	keep := g.liveHeads(ws)
	if !g.storeUnreadList(keep) {
		return // the old list stays; the next pass tries again
	}
	g.mu.Lock()
	lu.stale = false
	lu.written = make(map[uint64]unreadEntry, len(keep))
	for _, w := range keep {
		lu.written[w.Key] = w
	}
	for k := range lu.fps {
		if _, ok := lu.written[k]; !ok {
			delete(lu.fps, k)
		}
	}
	g.mu.Unlock()
}

// liveHeads gives ws's entries their first bytes (looked at once per
// listed file, again when it is another file or shorter) and leaves out a
// file gone since the pass looked (the glob counts it). Manager goroutine.
func (g *Glob) liveHeads(ws []unreadEntry) []unreadEntry {
	lu := &g.live
	if lu.fps == nil {
		lu.fps = map[uint64]liveHead{}
	}
	lu.noHead = nil
	var keep []unreadEntry
	for _, w := range ws {
		if (w.s != nil && w.s.listed != nil) || w.handed {
			keep = append(keep, w) // the previous run's entry as it was (waitingNow)
			continue
		}
		h, ok := lu.fps[w.Key]
		ok = ok && h.s == w.s
		if old, listed := lu.written[w.Key]; listed && w.Size < old.Size {
			ok = false // shorter than when listed: its first bytes may be new
		}
		if ok && h.n < pointer.MaxFingerprint && uint64(w.Size) > h.n {
			// Grown past the first bytes looked at: listed by the scan
			// that found it (listAtOnce), they were often a partial
			// first line — a restart's identity check resting on a few
			// bytes (review 33a A). Read again with the size's write.
			ok = false
		}
		if !ok {
			n, fp := headOfPath(w.headPath())
			if n == 0 {
				// Gone since the pass looked (the glob counts it), or
				// unreadable: left out, retried unhurried (noHead).
				if lu.noHead == nil {
					lu.noHead = map[uint64]*gstream{}
				}
				lu.noHead[w.Key] = w.s
				continue
			}
			h = liveHead{s: w.s, n: uint64(n), fp: fp}
			lu.fps[w.Key] = h
		}
		w.FPLen, w.FP = int(h.n), h.fp
		keep = append(keep, w)
	}
	return keep
}

// listedLive: the list on disk may name key (forget keeps that stream's
// pointer until the list no longer does: a restart skips a listed file
// whose key a pointer names). Under mu.
func (g *Glob) listedLive(key uint64) bool {
	_, ok := g.live.written[key]
	return ok
}
