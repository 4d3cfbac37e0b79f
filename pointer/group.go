package pointer

import (
	"os"
	"sync"

	"tailfeed/internal/fileutil"
)

// Group commit. A glob feed opens hundreds of new pointers at once (one per
// matched file, DESIGN §10), each appending to the one epochs file and
// creating an entry in the one pointer directory, each of which must be on
// disk before the pointer holds its epoch. Done one by one that is an fsync
// per pointer per step, serialised by the file system's journal; here
// callers that arrive while such an fsync runs share the next one: the
// first caller (the leader) runs it for everything queued, the others wait
// for its result. Every caller still returns only once an fsync that
// started after its call (its own write included) has finished, so the
// write-ahead order of the epochs file and the durability of a new
// pointer's directory entry are those of the one-by-one calls.

// syncFile fsyncs f (tests count the calls).
var syncFile = (*os.File).Sync

// syncDir fsyncs a directory (tests count the calls).
var syncDir = fileutil.SyncDir

// batch is one shared operation: done is closed once it ran, err its result.
type batch struct {
	done chan struct{}
	err  error
}

// group runs one operation at a time for many callers: a caller joins the
// batch that has not started yet, or starts a new one and leads it.
type group struct {
	mu   sync.Mutex
	next *batch // the batch not started yet (nil: none)
	last *batch // the batch started last (its leader's turn ends when done)

	pending []byte // epochs lines not yet written (the epochs file's group)
}

// join adds the caller's work (add runs under the group's mutex) to the
// batch not started yet and waits for its result. The caller that opens a
// batch leads it: once the batch before it is done, it takes the work
// added (take, under the mutex; later callers open the next batch) and
// runs it. One batch runs at a time, and each leader runs its own only.
func (g *group) join(add func(), take func() any, run func(any) error) error {
	g.mu.Lock()
	if add != nil {
		add()
	}
	if b := g.next; b != nil {
		g.mu.Unlock()
		<-b.done
		return b.err
	}
	b := &batch{done: make(chan struct{})}
	prev := g.last
	g.next, g.last = b, b
	g.mu.Unlock()
	if prev != nil {
		<-prev.done
	}
	g.mu.Lock()
	g.next = nil
	var work any
	if take != nil {
		work = take()
	}
	g.mu.Unlock()
	b.err = run(work)
	close(b.done)
	return b.err
}

// groups holds one group per path (epochs file, pointer directory); a
// daemon has few.
var groups = struct {
	sync.Mutex
	m map[string]*group
}{m: map[string]*group{}}

func groupFor(kind, path string) *group {
	groups.Lock()
	defer groups.Unlock()
	k := kind + "\x00" + path
	g := groups.m[k]
	if g == nil {
		g = &group{}
		groups.m[k] = g
	}
	return g
}

// appendGrouped appends line (newline-terminated) to the epochs file at
// path and returns once it is fsynced, sharing the write and the fsync with
// the callers that append meanwhile.
func appendGrouped(path string, line []byte) error {
	g := groupFor("epochs", path)
	add := func() { g.pending = append(g.pending, line...) }
	take := func() any {
		b := g.pending
		g.pending = nil
		return b
	}
	return g.join(add, take, func(w any) error { return appendSync(path, w.([]byte)) })
}

// syncDirGrouped fsyncs dir once an fsync of it that started after the
// call has finished, shared with the callers meanwhile.
func syncDirGrouped(dir string) error {
	return groupFor("dir", dir).join(nil, nil, func(any) error { return syncDir(dir) })
}
