package file

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"

	"tailfeed/pointer"
)

// movedListName is, in a glob feed's pointer directory, the list a clean
// stop writes of the files renamed within the glob while tailfeed ran
// (DESIGN §10 "A rename within the glob keeps the stream"): each stream's
// pointer record (epoch, file key, first bytes) and the path its file was
// at when tailfeed stopped. A pointer's stream is known at the next start
// by the path it was first matched under (its epochs line); a file not
// found in the glob then is gone while stopped unless found beside that
// path — and a first path the config still matches says nothing of why the
// file left it (renamed out while stopped: generations rotated away unseen
// may follow it). This list tells it: a file still at the name it had in
// the glob at the stop, which the config (an exclude added, a narrowed
// path) no longer matches, is the operator's choice not to read it, as a
// file still at its first path is (unmatchedAt) — no loss (review 9c A).
// The start reads and removes it (countGone). A kill -9 writes none: such a
// file then counts gone as before (lostTails 1: an overcount, never a
// miss).
const movedListName = "moved.list"

// movedEntry is one file of the moved list.
type movedEntry struct {
	Epoch uint64 `json:"epoch"`
	Key   uint64 `json:"key"`
	FPLen uint64 `json:"fpLen"`
	FP    uint64 `json:"fp"`
	Path  string `json:"path"`
}

// movedAt is a stream renamed within the glob, as Close saw it.
type movedAt struct {
	ptrPath, path string
	key           uint64
}

// movedAtStop is, at Close, every stream with a pointer whose file was
// renamed within the glob (at a matched path other than its first). Under
// mu.
func (g *Glob) movedAtStop() []movedAt {
	if g.cfg.PointerDir == "" {
		return nil
	}
	var out []movedAt
	for k, s := range g.byKey {
		if k == s.key && !s.gone && s.ptrPath != "" && s.path != s.first && g.matched(s.path) {
			out = append(out, movedAt{ptrPath: s.ptrPath, path: s.path, key: s.key})
		}
	}
	return out
}

// writeMovedList stores the moved list from ms, after the final commits:
// an entry names its pointer's record as it is on disk, only while that
// record names the stream's file with its first bytes and the file is at
// the path (else the start's rules apply as without it). None: an old list
// is removed. Without mu.
func (g *Glob) writeMovedList(ms []movedAt) {
	if g.cfg.PointerDir == "" {
		return
	}
	path := filepath.Join(g.cfg.PointerDir, movedListName)
	var b bytes.Buffer
	for _, m := range ms {
		rec, err := pointer.Inspect(m.ptrPath)
		if err != nil || rec.FileKey != m.key || rec.FPLen == 0 || !exists(m.path, m.key) {
			continue
		}
		line, err := json.Marshal(movedEntry{Epoch: rec.Epoch, Key: rec.FileKey, FPLen: rec.FPLen, FP: rec.FP, Path: m.path})
		if err != nil {
			continue
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := storeList(path, b.Bytes()); err != nil {
		g.log.Warn("cannot write the glob's moved list: a file renamed within the glob that the config no longer matches at the next start will be counted gone",
			"path", path, "error", err)
	}
}

// readMovedList is the moved list a stop left, by (epoch, file key), and
// removes it (the start's countGone is its only reader). Manager
// goroutine, at the start.
func (g *Glob) readMovedList() map[[2]uint64]movedEntry {
	if g.cfg.PointerDir == "" {
		return nil
	}
	path := filepath.Join(g.cfg.PointerDir, movedListName)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := map[[2]uint64]movedEntry{}
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		var m movedEntry
		if len(line) == 0 || json.Unmarshal(line, &m) != nil || m.Key == 0 || m.FPLen == 0 || m.Path == "" {
			continue
		}
		out[[2]uint64{m.Epoch, m.Key}] = m
	}
	return out
}

// removeMovedList removes the moved list once the start has used it.
func (g *Glob) removeMovedList() {
	if g.cfg.PointerDir == "" {
		return
	}
	path := filepath.Join(g.cfg.PointerDir, movedListName)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		g.log.Warn("cannot remove the glob's moved list", "path", path, "error", err)
	}
}

// movedUnmatched: the moved list names l's pointer's record (its epoch and
// file key) at a path the pattern still matches but an exclude now
// removes, and that file (its key and first bytes) is still there: the path
// and its size. Only an exclude: at a name the changed pattern no longer
// matches, the file is one renamed out of the glob as far as the new
// pattern goes — read on beside its path (besideAtStart), or counted when
// it cannot be (review 22a A, C: taken for excluded, its lines written
// while stopped were neither read nor counted).
func (g *Glob) movedUnmatched(l loaded, moved map[[2]uint64]movedEntry) (string, int64, bool) {
	m, ok := moved[[2]uint64{l.rec.Epoch, l.rec.FileKey}]
	if !ok || m.FPLen != l.rec.FPLen || m.FP != l.rec.FP || !g.pat.Match(m.Path) || !g.excluded(m.Path) {
		return "", 0, false
	}
	excl, size := g.unmatchedAt(m.Path, l.rec)
	return m.Path, size, excl
}
