package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"tailfeed/internal/datadir"
	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
	"tailfeed/processor"
	"tailfeed/status"
)

// releasedKeep is how many ranges a subscriber's entry keeps (the oldest
// go first): a range only matters until the sink's own record passes it.
const releasedKeep = 64

// releasedStore is dataDir/state/released.json: the lines each subscriber
// was released from on purpose (POST /admin/release) while its sink could
// not record them itself — an engine down, so no mark could be written
// (processor.GroupConfig.OnRelease). DESIGN §11: a sink's done-through mark
// is the last line it "applied, filtered, dead-lettered or was released
// from (every built-in record advances over such lines)"; without this, a
// start after such a release found the sink behind the pointer, committed
// it back and every subscriber received the released lines again.
//
// A range (epoch, after, through) moves a sink's mark of that epoch to
// through only when the mark is at or past after — the end of the last
// line handed to the sink before the released ones — so a sink restored
// to an earlier point is still caught up from its own mark (the released
// lines then land in it: duplicates, never a gap).
type releasedStore struct {
	mu      sync.Mutex
	path    string
	entries []releasedEntry
}

type releasedEntry struct {
	Feed       string `json:"feed"`
	Subscriber string `json:"subscriber"`
	Epoch      string `json:"epoch"`
	After      int64  `json:"after"`
	Through    int64  `json:"through"`
}

func openReleased(dataDir string) (*releasedStore, error) {
	s := &releasedStore{path: filepath.Join(dataDir, datadir.State, "released.json")}
	var doc struct {
		Released []releasedEntry `json:"released"`
	}
	if err := readStateJSON(s.path, &doc); err != nil {
		return nil, err
	}
	s.entries = doc.Released
	return s, nil
}

// add records a range, joined to the subscriber's last one when it goes
// on from it (lines released one at a time), and saves the file (fsync,
// rename, fsync of the directory) before it returns.
func (s *releasedStore) add(feedName, sub string, epoch uint64, after, through int64) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ep := status.Hex(epoch)
	last, n := -1, 0
	for i, e := range s.entries {
		if e.Feed == feedName && e.Subscriber == sub {
			last, n = i, n+1
		}
	}
	if last >= 0 {
		if e := &s.entries[last]; e.Epoch == ep && e.Through == after {
			e.Through = through
			return s.saveLocked()
		}
	}
	if n >= releasedKeep {
		for i, e := range s.entries {
			if e.Feed == feedName && e.Subscriber == sub {
				s.entries = append(s.entries[:i], s.entries[i+1:]...)
				break
			}
		}
	}
	s.entries = append(s.entries, releasedEntry{Feed: feedName, Subscriber: sub, Epoch: ep, After: after, Through: through})
	return s.saveLocked()
}

// dropOverlap drops the subscriber's ranges of epoch that the lines from
// after through through, given to its queue now, overlap (SetOnAccept):
// the sink has those lines again (a re-read after a crash), so its own
// record tells how far it got — left, such a range would move a mark
// inside it (the sink restored to a point there) past lines it lacks
// (review 27a RA). Saved before it returns when it dropped one.
func (s *releasedStore) dropOverlap(feedName, sub string, epoch uint64, after, through int64) error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries) == 0 {
		return nil
	}
	var ep string
	n := len(s.entries)
	s.entries = slices.DeleteFunc(s.entries, func(e releasedEntry) bool {
		if e.Feed != feedName || e.Subscriber != sub || e.After >= through || after >= e.Through {
			return false
		}
		if ep == "" {
			ep = status.Hex(epoch)
		}
		return e.Epoch == ep
	})
	if len(s.entries) == n {
		return nil
	}
	return s.saveLocked()
}

func (s *releasedStore) saveLocked() error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	doc := struct {
		Released []releasedEntry `json:"released"`
	}{Released: s.entries}
	if doc.Released == nil {
		doc.Released = []releasedEntry{}
	}
	data, _ := json.Marshal(doc)
	return fileutil.WriteAtomic(s.path, append(data, '\n'))
}

// apply moves the sink's marks over the ranges it was released from (in
// the order they were recorded, so that ranges going on from each other
// chain), as the sink's own record would have. A range of an epoch's first
// lines (after 0) where the sink has no mark of that epoch counts when the
// epochs file (lines; nil: not known) shows the sink holds all of the
// epoch the pointer moved on from to it: its mark there at or past that
// epoch's end (the catch-up's own rule, internal/catchup).
func (s *releasedStore) apply(feedName, sub string, marks []processor.Mark, lines []pointer.EpochLine) []processor.Mark {
	if s == nil || len(marks) == 0 {
		return marks
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	movedBy := map[uint64]pointer.EpochLine{} // epoch → the last line moving the pointer off it
	for _, l := range lines {
		if l.PrevEpoch != 0 && l.PrevEpoch != l.Epoch {
			movedBy[l.PrevEpoch] = l
		}
	}
	out := slices.Clone(marks)
	// Passes until nothing moves: ranges are recorded in the order they
	// were given up, not in file order (a refusal at the publish before a
	// release of earlier lines: review 27a RC), and one moved mark may
	// reach the next range.
	for moved := true; moved; {
		moved = false
		for _, e := range s.entries {
			if e.Feed != feedName || e.Subscriber != sub {
				continue
			}
			ep, err := strconv.ParseUint(e.Epoch, 16, 64)
			if err != nil {
				continue
			}
			found := false
			for i, m := range out {
				if m.Epoch != ep {
					continue
				}
				found = true
				if m.Position >= e.After && m.Position < e.Through {
					out[i].Position, moved = e.Through, true
				}
			}
			if found || e.After != 0 {
				continue
			}
			for _, m := range out {
				if l, ok := movedBy[m.Epoch]; ok && l.Epoch == ep && m.Position >= l.PrevOffset {
					out, moved = append(out, processor.Mark{Epoch: ep, Position: e.Through}), true
					break
				}
			}
		}
	}
	return out
}
