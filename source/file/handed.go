package file

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// Listed files handed to their path's stream (fortieth session; the
// faults a soak of TestAud11AOKGlobKill9Property found in the thirty-ninth).
//
// A file of the previous run's unread list (tracked, never read, no pointer
// of its own: a live rotation's new file waiting behind the renamed-out one
// before it) renamed out of the glob while tailfeed was down, or compressed
// there (logrotate create + compress), is a later generation of the file
// the previous run's pointer of its path names: the stream of that path
// given that pointer at this start reads it in the path's order, after the
// older generation, before the file at the path (resumeRotated; DESIGN §10
// "Order"). Read as a stream of its own beside the path as well
// (readListedBeside), its lines were published while that source still
// read the older generation (379 lines of a.log out of order in the
// exactlyOnce output); compressed, it was counted lost while that source
// read its .gz (lossless false over nothing lost).
//
// So the start hands such a file to the path's stream (handOverListed) and
// keeps the previous run's entry in the unread list, as it was, until that
// stream's pointer names the file or a file after it (handedPassed): a
// kill -9 or a stop before that leaves the entry to the next start, which
// finds the file beside the path and hands it over again, reads it as its
// own stream (the pointer moved on meanwhile), or counts it gone. A first
// version dropped the entry at the hand-over: a second kill, then a
// rotation deleting the file, lost its lines uncounted (review 39b; the
// e2e TestRev32B/C generation tests). While running, until a source of
// that stream has opened (its scan of the generations then queues the file,
// and counts it if it cannot be opened), the glob looks for the file at
// every housekeeping pass and counts it when it is gone (checkHanded).

// handedFile is a listed file handed to its path's stream.
type handedFile struct {
	w   unreadEntry // the previous run's entry, as it was (listed until passed)
	key uint64      // the file the stream's source reads: w's own, or its .gz's
	at  *gstream    // the stream of w's path given the previous run's pointer
	// opened: a source of at opened (its generations scanned): from then on
	// the source decides about the file (genUnread counts it gone).
	opened bool
	passed bool // at's pointer named it or a file after it; or it was counted
	// read: seen among the files at's sources switched away from (sticky:
	// that list keeps the last ones only, trimGens — review 40d finding 4).
	read bool
}

// readsAsLater is laterGeneration where a start's decision not to read a
// listed file as a stream of its own rests on it (handOverListed): only
// when s's pointer names a file with first bytes (not an empty record: its
// source may count it lost and read no generation, forgetLost) that is
// found beside s's first path as its source finds it — by its key, else a
// plain copy (findCopy), else a .gz (findGzCopy) — and p, a rotated name of
// the path, was modified no earlier than that file less mtimeSlack. Review
// 39 finding 2: laterGeneration's fallback to the pointer file's mtime let
// a listed file go unread and uncounted. Under mu.
func (g *Glob) readsAsLater(s *gstream, p string) bool {
	name, base := filepath.Base(p), filepath.Base(s.first)
	if !sameStem(name, base) || !isRotatedName(g.cfg.Stream.RotatedNames, name, base) {
		return false
	}
	rec, err := pointer.Inspect(s.ptrPath)
	if err != nil || rec.FileKey == 0 || rec.FPLen == 0 {
		return false
	}
	var ref time.Time
	if f := g.keyBeside(s.first, rec); f != nil {
		if fst, err := f.Stat(); err == nil {
			ref = fst.ModTime()
		}
		f.Close()
	} else {
		places := pathPlaces(s.first)
		if mod, ok := g.plainCopyOf(places, rec, s.key); ok {
			ref = mod
		} else if gz, mod := g.gzCopyOf(places, rec); gz != "" {
			ref = mod
		}
	}
	st, err := os.Stat(p)
	if ref.IsZero() || err != nil {
		return false
	}
	return !st.ModTime().Before(ref.Add(-mtimeSlack))
}

// pathPlaces are the directories a path's generations are in, with the
// path's base name there: its own, and a symlinked path's target's (§4
// "Symlinks").
func pathPlaces(first string) [][2]string {
	places := [][2]string{{filepath.Dir(first), filepath.Base(first)}}
	if t, link := resolveLink(first); link {
		places = append(places, [2]string{filepath.Dir(t), filepath.Base(t)})
	}
	return places
}

// handTarget is the stream of path given the previous run's pointer of the
// path at this start whose source has not reached its own file (the
// pointer names another one), else nil. Under mu.
func (g *Glob) handTarget(path string) *gstream {
	at := g.byPath[path]
	if at == nil || !at.genOwn || at.first != path || at.ptrPath == "" || at.done || g.pointerNames(at) {
		return nil
	}
	return at
}

// handOverListed hands the listed file w, found beside its path as f (by
// its key; nil: not found so) or compressed there, to the path's stream
// when that stream's source reads it as a later generation of its
// pointer's file (readsAsLater): true when it did (the caller reads it as
// no stream of its own). A file shorter than listed is not handed over
// (readListedBeside counts what was cut). At the first scan, under mu.
func (g *Glob) handOverListed(w unreadEntry, f *os.File) bool {
	at := g.handTarget(w.Path)
	if at == nil {
		return false
	}
	var p string
	var key uint64
	if f != nil {
		st, err := f.Stat()
		if err != nil || st.Size() < w.Size || !g.readsAsLater(at, f.Name()) {
			return false
		}
		p, key = f.Name(), w.Key
	} else {
		if w.FPLen <= 0 {
			return false
		}
		gz, _ := g.gzCopyOf(pathPlaces(w.Path), pointer.Record{FPLen: uint64(w.FPLen), FP: w.FP, Offset: w.Size})
		if gz == "" || !g.readsAsLater(at, gz) {
			return false
		}
		dev, ino, err := fileutil.DevInoPath(gz)
		if err != nil {
			return false
		}
		p, key = gz, pointer.FileKey(dev, ino)
	}
	e := w
	e.s, e.head = nil, ""
	if e.HandedAt == 0 {
		e.HandedAt = time.Now().UnixNano()
	}
	e.HandedKey = 0
	if key != w.Key {
		e.HandedKey = key
	}
	// Its first bytes and size as the file holds them now (grown since it
	// was listed: the source's reader fingerprints them so, and the
	// switched-away files are matched by them — review 40c finding 3).
	if f != nil {
		b := make([]byte, pointer.MaxFingerprint)
		if n, err := f.ReadAt(b, 0); n >= e.FPLen && (err == nil || n < len(b)) {
			e.FPLen, e.FP = n, pointer.Fingerprint(b[:n])
		}
		if st, err := f.Stat(); err == nil && st.Size() > e.Size {
			e.Size = st.Size()
		}
	} else if head, dsize, ok := inspectGz(p); ok && len(head) >= e.FPLen {
		e.FPLen, e.FP = len(head), pointer.Fingerprint(head)
		e.Size = max(e.Size, dsize)
	}
	g.handed = append(g.handed, &handedFile{w: e, key: key, at: at})
	if g.listedRead == nil {
		g.listedRead = map[uint64]bool{}
	}
	g.listedRead[w.Key] = true
	g.log.Info("glob file tracked and never read when tailfeed stopped was rotated out of the glob while it was down; its path's stream reads it as a later generation, in the path's order",
		"path", p, "first", w.Path, "size", w.Size)
	return true
}

// handedPassed: h's stream's pointer names h's file or a file its source
// read after it (one after h's among the files its sources switched away
// from, the stream's own file among them): every line of h's file is
// committed, or the pointer tells a restart where it is. Its pointer
// forgotten (read to its end, or counted), the stream done: passed too.
// skipped: the stream's source reached its own file (its pointer names it,
// or it read it to its end and forgot it: the empty record) and no source
// of it switched away from h's file (a .gz too: switchTo notes it) — read
// by nobody (a generation scan that left it out, its pointer's file gone
// at its open: review 40 findings 2, 3). Under mu.
func (g *Glob) handedPassed(h *handedFile) (passed, skipped bool) {
	at := h.at
	// The pointer before the switched-away files: a source notes a file
	// there before its pointer moves off it, so read the other way round a
	// switch in between showed the pointer moved and the file not read
	// (review 40c finding 4).
	rec, err := pointer.Inspect(at.ptrPath)
	gens := slices.Clone(at.gens)
	ownForgot := false
	if at.src != nil {
		gens = append(gens, at.src.GensDone()...)
		ownForgot = at.src.ForgotKey() == at.key
	}
	// h's file by any key it was read under (its own, its .gz's) or by
	// the first bytes it was listed with (compressed after the hand-over,
	// read as a .gz: review 40b finding 3).
	i := slices.IndexFunc(gens, func(d GenDone) bool {
		return d.Key == h.key || d.Key == h.w.Key || (d.FPLen == h.w.FPLen && d.FP == h.w.FP && d.End >= h.w.Size)
	})
	if i >= 0 {
		h.read = true
	} else if h.read {
		// Switched away from, and trimmed from the list since: long
		// passed unless the pointer still names it.
		return true, false
	}
	switch {
	case err != nil:
		if i >= 0 || (at.done && os.IsNotExist(err)) {
			return true, false
		}
		return false, false
	case rec.FileKey == 0:
		// The empty record: its own file read to its end and forgotten
		// (or a record a start found lost): the files switched away from
		// tell (review 40b finding 1: an early return here left h listed,
		// neither passed nor skipped, for the rest of the run).
		if i >= 0 {
			return true, false
		}
		own := at.ownRead || ownForgot
		return own, own
	case rec.FileKey == h.key || rec.FileKey == h.w.Key:
		return true, false
	case i < 0:
		own := rec.FileKey == at.key
		return own, own
	}
	// Switched away from h's file: passed once the pointer names none of
	// the files read up to it (the older generations).
	return !slices.ContainsFunc(gens[:i+1], func(d GenDone) bool { return d.Key == rec.FileKey }), false
}

// handedThere: h's file is still beside its path — by its key and first
// bytes, or compressed (a .gz holding its first bytes and size: its key
// becomes the .gz's, which the source reads). Under mu.
func (g *Glob) handedThere(h *handedFile) bool {
	rec := pointer.Record{FileKey: h.key, FPLen: uint64(h.w.FPLen), FP: h.w.FP}
	if f := g.keyBeside(h.w.Path, rec); f != nil {
		f.Close()
		return true
	}
	rec.Offset = h.w.Size
	gz, _ := g.gzCopyOf(pathPlaces(h.w.Path), rec)
	if gz == "" {
		return false
	}
	if dev, ino, err := fileutil.DevInoPath(gz); err == nil {
		h.key = pointer.FileKey(dev, ino)
	}
	return true
}

// checkHanded, at a housekeeping pass, drops the handed files their
// stream's pointer has passed (handedPassed) and counts one gone before a
// source of that stream opened: no scan of its generations can find it
// then, and nothing else would count it (DESIGN §4 "Nothing green over a
// loss"). Under mu.
func (g *Glob) checkHanded() {
	for _, h := range g.handed {
		if h.passed {
			continue
		}
		passed, skipped := g.handedPassed(h)
		if skipped && h.key == h.w.Key {
			// Compressed after the hand-over, its .gz read under a key the
			// glob did not know: handedThere takes that key when the
			// plain file is gone — look again (review 40d finding 1).
			if g.handedThere(h); h.key != h.w.Key {
				passed, skipped = g.handedPassed(h)
			}
		}
		if !skipped && !passed && g.byKey[h.at.key] != h.at {
			// Its stream forgotten (or its key another stream's) before
			// its pointer passed it: nobody reads it as a generation now.
			skipped = true
		}
		if skipped {
			h.passed = true
			g.readHandedBeside(h)
			continue
		}
		if passed {
			h.passed = true
			continue
		}
		if src := h.at.src; src != nil && src.Opened() {
			h.opened = true
		}
		if h.opened || g.handedThere(h) {
			continue
		}
		if passed, _ := g.handedPassed(h); passed {
			h.passed = true
			continue
		}
		h.passed = true
		g.countLossLocked(1, uint64(h.w.Size), 0, fmt.Sprintf("glob file %s, tracked and never read when tailfeed stopped and rotated out of the glob while it was down, was gone before its path's stream read it: its %d bytes were never read",
			h.w.Path, h.w.Size))
	}
	g.handed = slices.DeleteFunc(g.handed, func(h *handedFile) bool { return h.passed })
}

// handedEntries are the unread list's entries of the handed files not
// passed yet: the previous run's entries as they were. Under mu.
func (g *Glob) handedEntries() []unreadEntry {
	var out []unreadEntry
	for _, h := range g.handed {
		if !h.passed {
			e := h.w
			e.handed = true
			if h.key != h.w.Key {
				e.HandedKey = h.key // (its .gz, found since the hand-over)
			}
			out = append(out, e)
		}
	}
	return out
}

// readHandedBeside: h's stream's source reached its own file without
// reading h's (review 40 finding 2: its pointer's file gone at its open,
// the generations taken by the pointer file's mtime): a plain one still
// beside its path is read from its start as a stream of its own (late,
// out of the path's order, but read), listed as the previous run's entry
// until its pointer names it; a .gz, or one gone, is counted. Under mu.
func (g *Glob) readHandedBeside(h *handedFile) {
	if b := g.byKey[h.w.Key]; b != nil {
		// Tracked by the glob already (back in the glob, a reload that
		// widened it): its stream reads it (review 40b).
		return
	}
	if h.key == h.w.Key {
		if f := g.keyBeside(h.w.Path, pointer.Record{FileKey: h.w.Key, FPLen: uint64(h.w.FPLen), FP: h.w.FP}); f != nil {
			st, err := f.Stat()
			p := f.Name()
			f.Close()
			if err == nil && g.matched(p) {
				return // in the glob: the next scan takes it as a file of its own
			}
			if err == nil {
				if b := g.queueBesideLocked(p, h.w.Path, h.w.Key, st); b != nil {
					e := h.w
					e.s, e.handed = b, false
					b.listed = &e
					g.log.Warn("glob file handed to its path's stream was not read by it before its own file; read from its start where it is, after that file",
						"path", p, "first", h.w.Path, "size", st.Size())
					return
				}
			}
		}
	}
	g.countLossLocked(1, uint64(h.w.Size), 0, fmt.Sprintf("glob file %s, tracked and never read when tailfeed stopped and rotated out of the glob while it was down, was not read by its path's stream before that stream's own file: its %d bytes were never read",
		h.w.Path, h.w.Size))
}

// listedPassed: the previous run's listed file w, handed to its path's
// stream (HandedAt), was read to its end and every line of it
// acknowledged — an epochs "reset" line written since the hand-over moves
// a pointer off it (its own key, the .gz's it was handed as, or the .gz's
// found now), with its first bytes, and at most maxUnendedTail past that
// offset.
// Found beside its path by its key, by its .gz (compressed while down), or
// not at all (deleted while down: the line's offset at or past its listed
// size). A kill -9 after that pointer moved on and before the list dropped
// the entry (a housekeeping pass later) left the entry: read again from its
// start it was delivered twice and after the path's newer file; compressed
// or deleted, it was counted lost though read (review 40 finding 1, 40b
// finding 2, 40c finding 2). Only handed files: a line left by an older
// file on a reused inode, or before the hand-over, proves nothing (review
// 40c finding 1). At the first scan, under mu.
func (g *Glob) listedPassed(w unreadEntry) bool {
	if g.cfg.EpochsPath == "" || w.HandedAt == 0 {
		return false
	}
	if g.resetOff == nil {
		g.resetOff = map[uint64][]pointer.EpochLine{}
		lines, _ := pointer.ReadEpochs(g.cfg.EpochsPath)
		for _, l := range lines {
			if l.Reason == "reset" && l.PrevEpoch != 0 && l.PrevFileKey != 0 && l.PrevFPLen > 0 {
				g.resetOff[l.PrevFileKey] = append(g.resetOff[l.PrevFileKey], l)
			}
		}
	}
	since := time.Unix(0, w.HandedAt)
	// lines: the reset lines since the hand-over moving a pointer off one
	// of keys whose first bytes ok accepts.
	lines := func(ok func(l pointer.EpochLine) bool, keys ...uint64) []pointer.EpochLine {
		var out []pointer.EpochLine
		for _, k := range keys {
			if k == 0 {
				continue
			}
			for _, l := range g.resetOff[k] {
				if !l.Time.Before(since) && ok(l) {
					out = append(out, l)
				}
			}
		}
		return out
	}
	rec := pointer.Record{FileKey: w.Key, FPLen: uint64(w.FPLen), FP: w.FP}
	if f := g.keyBeside(w.Path, rec); f != nil {
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return false
		}
		// (A late write past the line's offset, up to maxUnendedTail, as
		// readBeforeStart allows for a copy: lines appended to a rotated
		// file after its source moved off it and closed it are not read —
		// README "What is lost": uncounted; read again from its start,
		// its committed lines would come twice after a kill.)
		return len(lines(func(l pointer.EpochLine) bool {
			return uint64(st.Size()) >= l.PrevFPLen && st.Size() <= l.PrevOffset+maxUnendedTail && headIs(f, int(l.PrevFPLen), l.PrevFP)
		}, w.Key)) > 0
	}
	rec.Offset = w.Size
	if gz, _ := g.gzCopyOf(pathPlaces(w.Path), rec); gz != "" {
		head, dsize, ok := inspectGz(gz)
		if !ok {
			return false
		}
		var gzKey uint64
		if dev, ino, err := fileutil.DevInoPath(gz); err == nil {
			gzKey = pointer.FileKey(dev, ino)
		}
		return len(lines(func(l pointer.EpochLine) bool {
			return dsize <= l.PrevOffset && headMatches(head, l.PrevFPLen, l.PrevFP)
		}, w.Key, w.HandedKey, gzKey)) > 0
	}
	// Gone: a line moving a pointer off it at or past its listed size,
	// with its listed first bytes when the line's are as many; or, under
	// any key (its .gz made and read after the last list write — review
	// 40d finding 2), a line with exactly its listed first bytes.
	if len(lines(func(l pointer.EpochLine) bool {
		return l.PrevOffset >= w.Size && (l.PrevFPLen != uint64(w.FPLen) || l.PrevFP == w.FP)
	}, w.Key, w.HandedKey)) > 0 {
		return true
	}
	for _, ls := range g.resetOff {
		for _, l := range ls {
			if !l.Time.Before(since) && l.PrevOffset >= w.Size && l.PrevFPLen == uint64(w.FPLen) && l.PrevFP == w.FP {
				return true
			}
		}
	}
	return false
}

// handedPending: a handed file its stream (still tracked) has not passed
// yet: the feed is behind until then — caught up over it, it was settled
// with the file unread, or before its loss was counted (review 40d finding
// 3). Under mu.
func (g *Glob) handedPending() int {
	n := 0
	for _, h := range g.handed {
		if !h.passed && g.byKey[h.at.key] == h.at {
			n++
		}
	}
	return n
}
