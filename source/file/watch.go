package file

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Wake-ups. fsnotify watches the input's directory (a watch on the file
// would follow the inode away on a rename); an event is only a hint, sent
// without blocking into a channel of one. Events name the path, except while
// a rotation is in progress (the open file is not at the path, files are
// queued or old files watched): then any event in the directory wakes the
// source, since the writer may still append to a renamed file. The poll
// interval covers file systems where events never arrive.

// pollIfDue checks the path and the old files when an event arrived or a
// poll interval passed since the last check.
func (s *Source) pollIfDue() {
	select {
	case <-s.events:
		s.kick = true
	default:
	}
	if s.kick || time.Since(s.lastPoll) >= s.pollEvery() {
		s.poll()
	}
}

// pollEvery is the poll interval now: IdlePoll (a glob stream, woken by
// the glob's watcher) while its file is at its path and no rotation is
// in progress, else Poll.
func (s *Source) pollEvery() time.Duration {
	if s.cfg.IdlePoll > s.cfg.Poll && s.cur != nil && !s.missing && len(s.old) == 0 && len(s.next) == 0 {
		return s.cfg.IdlePoll
	}
	return s.cfg.Poll
}

// poll is one poll: check the path against the open file, read the old
// files.
func (s *Source) poll() {
	s.kick = false
	s.lastPoll = time.Now()
	if s.watcher != nil {
		s.addWatches()
	}
	s.check()
	s.pollOld()
}

// wait sleeps until something may have changed: a group finished work, the
// file changed (fsnotify), the next poll, a due msync, or the stop.
func (s *Source) wait(ctx context.Context) {
	d := s.pollEvery() - time.Since(s.lastPoll)
	if s.commit.stored && !s.commit.inFlight {
		d = min(d, s.syncEvery()-time.Since(s.commit.lastSync))
	}
	if d <= 0 {
		return
	}
	// One timer per source, reset at each wait (a glob's hundreds of
	// streams wait often while the feed acknowledges).
	if s.waitT == nil {
		s.waitT = time.NewTimer(d)
	} else {
		s.waitT.Reset(d)
	}
	select {
	case <-ctx.Done():
	case <-s.pub.Wake():
	case <-s.events:
		s.kick = true
	case <-s.waitT.C:
	}
	s.waitT.Stop()
}

func (s *Source) startWatch() {
	if s.cfg.NoNotify || s.cfg.Strategy.Bounded() {
		return
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.log.Warn("fsnotify unavailable; polling only", "error", err)
		return
	}
	// The path's directory, and the target's when the path is a symlink
	// (events for writes name the target).
	names := []string{filepath.Clean(s.cfg.Path)}
	if t, err := filepath.EvalSymlinks(s.cfg.Path); err == nil && t != names[0] {
		names = append(names, t)
	}
	for _, n := range names {
		s.watchDirs = append(s.watchDirs, watchDir{dir: filepath.Dir(n)})
	}
	s.watcher = w
	s.addWatches()
	s.watchDone = make(chan struct{})
	go s.forward(w, names)
}

// watchDir is a directory to watch and whether the watch is in place.
type watchDir struct {
	dir string
	ok  bool
}

// addWatches adds the watches not yet in place (a directory that does not
// exist yet is retried at every poll; polling covers it meanwhile).
func (s *Source) addWatches() {
	for i := range s.watchDirs {
		d := &s.watchDirs[i]
		if d.ok {
			continue
		}
		if err := s.watcher.Add(d.dir); err != nil {
			if !s.watchWarned {
				s.log.Warn("fsnotify watch failed; polling until it works", "dir", d.dir, "error", err)
				s.watchWarned = true
			}
			continue
		}
		d.ok = true
	}
}

// forward turns the watcher's events into wake-ups until it is closed.
func (s *Source) forward(w *fsnotify.Watcher, names []string) {
	defer close(s.watchDone)
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if s.watchAll.Load() || slices.Contains(names, filepath.Clean(ev.Name)) {
				poke(s.events)
			}
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			poke(s.events) // events may have been lost: look
		}
	}
}

func (s *Source) stopWatch() {
	if s.watcher != nil {
		s.watcher.Close()
		<-s.watchDone
		s.watcher = nil
	}
}

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
