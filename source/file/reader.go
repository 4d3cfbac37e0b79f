package file

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math"
	"math/bits"
	"os"
	"sync"
	"time"

	"tailfeed/feed"
	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// reader is one open input file: its descriptor, identity, epoch, read
// buffer and splitter state. The bytes buf[start:end] are read but not yet
// published (at most one partial line, or complete lines not yet batched);
// buf[0] is at file offset base.
//
// Only accessed from the source goroutine.
type reader struct {
	keys       *openKeys // the source's count of open descriptors by key (nil: not counted)
	f          *os.File
	dev, ino   uint64
	key        uint64
	epoch      uint64
	positioned bool // false: lines are delivered without a position (appended after a switch)
	// evidence: a compressed copy holding exactly what the pointer
	// committed (Source.committedGz), opened only to show nothing is
	// unread: the pointer is not bound to it.
	evidence bool

	buf        []byte  // nil while released (idle, see releaseBuf)
	box        *[]byte // buf's box in the pool (pooled buffers)
	bufLen     int
	filled     bool // the last read filled the space it had: a lazy buffer grows
	base       int64
	start, end int
	limit      int64 // once-reads: stop at this offset; -1 to tail
	onceCut    int64 // once-reads: bytes of its size at open gone before it read them (onceEnd), for atEnd to count
	onceTerm   int64 // a resumed once-read: the end of its last line when first opened (0: its limit)
	from       int64 // where the source began reading it (startFile; else 0)
	split      Splitter
	// past: a once-read's bytes after its last terminator, from limit (moved
	// back to just after that terminator, onceEnd) to the size it reads to:
	// never read, never delivered, counted in unterminated.
	past int64

	// In-memory fingerprint of the first fpLen bytes, to notice content
	// replaced in place.
	fpLen    int
	fp       uint64
	lastSize int64
	lastMod  time.Time
	grewAt   time.Time // when the file last grew (or was opened)
	closeAt  time.Time // old readers: when to stop watching
	queuedAt time.Time // queued readers: when the rotation was noticed
	// gone says why the file's content is no longer what was read
	// (truncated, replaced in place); it is read no further.
	gone string
	// copy: found as a copytruncate copy, a snapshot read up to the size
	// it had when found, then closed (never watched as a switched-away file).
	copy bool
	// openCheck: the first read after the open is checked (Source.changed)
	// before its lines are published, even within lastSize: the file may
	// have been cut since its first bytes and size were taken (headStat).
	openCheck bool
	// crTaken: the last line taken ended at a trailing lone '\r' (the file
	// was left for good, final); a '\n' read next completes that terminator.
	crTaken bool
	// nlTaken: the last byte taken (just before consumed()) is such a '\n',
	// skipped: the last line ends one byte before consumed() (lineEnd).
	nlTaken bool
	// twin: a retired file whose switch kept its epoch (same content under
	// a new key, case D) with a partial line pending; twin is the new file's
	// descriptor. The old file's first line, once ended, is left to the new
	// file when the new file holds it byte for byte (terminator included) at
	// the same offset; otherwise the old file delivers it whole.
	twin *os.File
	// gz: a compressed generation, read through gzip from its start (its
	// positions are those of the decompressed bytes); head holds its first
	// decompressed bytes (the fingerprint's). Always a snapshot.
	gz     *gzip.Reader
	head   []byte
	gzLost int64 // bytes of a .gz that could not be decompressed after all (to be counted)
	// noForget: the pointer's file, deleted, found not covered by the
	// pointer with nothing pending; it is not forgotten (forget.go).
	noForget bool
	// downAt > 0: a file read again under a pointer epoch whose late lines
	// were delivered downgraded from offset downAt on, under downEpoch (the
	// epochs file's "downgraded" line): its lines up to downAt keep the
	// epoch and a position, the rest are delivered under downEpoch without
	// one, as first delivered (DESIGN §11 catch-up, §4 epoch barrier).
	downAt    int64
	downEpoch uint64
}

// newReader makes a reader of f. A negative bufSize (a glob stream) makes
// the buffer lazy: allocated at the first read, sized to the bytes known to
// be waiting (4 KiB to 64 KiB, see lazyLen), doubled at every read that
// fills it up to 64 KiB, and while a line does not fit up to -bufSize.
func newReader(f *os.File, dev, ino uint64, bufSize, maxLine int) *reader {
	var buf []byte
	var box *[]byte
	if bufSize > 0 {
		box = getBuf(bufSize)
		buf = *box
	} else {
		bufSize = -bufSize
	}
	return &reader{
		bufLen: bufSize,
		f:      f, dev: dev, ino: ino, key: pointer.FileKey(dev, ino),
		positioned: true,
		buf:        buf,
		box:        box,
		limit:      -1,
		split:      Splitter{MaxLine: maxLine},
		grewAt:     time.Now(),
	}
}

// seek positions the reader at off (nothing buffered). Off is just after a
// line; when the byte before it, read through the descriptor, is a '\r', that
// line ended at a lone '\r' (taken as final when its file was left, then
// committed there): a '\n' at off completes that terminator, not a line.
// When it is no terminator, off is inside a line (after a piece of it): the
// splitter is told (mid), so that unterminated counts that line from its
// start (lineStart finds it when asked).
func (r *reader) seek(off int64) {
	r.base, r.start, r.end = off, 0, 0
	r.crTaken, r.nlTaken = false, false
	r.split.mid, r.split.longBefore = false, false
	if off > 0 {
		var b [1]byte
		if n, _ := r.f.ReadAt(b[:], off-1); n == 1 {
			r.crTaken = b[0] == '\r'
			if b[0] != '\n' && b[0] != '\r' {
				r.split.mid, r.split.lineFrom = true, -1
			}
		}
	}
	r.split.setLong(r.split.inLong)
}

// committedMid: r was positioned at a committed offset; inside a line,
// that offset is the end of a piece of an oversized line (only a piece
// ends inside a line), so the rest of the line ends it and it is counted
// once in oversized (DESIGN §4: "counts such lines (not pieces)") — a
// stream reopened, or a restart, inside such a line counted nothing
// (audit 9D).
func (r *reader) committedMid() {
	r.split.longBefore = r.split.mid // counted only: leaveToTwin still hands a copy-up its last line (review 27b RC)
}

// readPos is the offset of the next byte to read from the file.
func (r *reader) readPos() int64 { return r.base + int64(r.end) }

// consumed is the offset just after the last line taken.
func (r *reader) consumed() int64 { return r.base + int64(r.start) }

// unterminated is the number of bytes after the last terminator (DESIGN §4
// `unterminated`): read and not taken, plus those of the current line
// already delivered as pieces (or before the offset r was positioned at,
// inside that line), plus a once-read's bytes after its last terminator
// (past). Called when the source is at the end of what it read.
func (r *reader) unterminated() int64 {
	return r.readPos() - r.lineStart() + r.past
}

// crHeld: the bytes r read past its last line taken are one line ended by
// a lone '\r' as the last byte read — held while tailing (a "\r\n"'s
// possible first half), taken by a final split.
func (r *reader) crHeld() bool {
	start := r.start
	if r.crTaken && start < r.end && r.buf[start] == '\n' {
		start++
	}
	if start >= r.end || r.buf[r.end-1] != '\r' {
		return false
	}
	probe := r.split
	var found Found
	return probe.Split(r.buf[:r.end], start, r.base, true, math.MaxInt, math.MaxInt, &found) == r.end && found.Len() > 0
}

// lineStart is the file offset where the line at consumed() began: before
// it when r is inside a line (pieces of it taken, or positioned inside it);
// found once, by a scan back to the last terminator, when r was positioned
// there (a restart or resume inside a long line).
func (r *reader) lineStart() int64 {
	if !r.split.mid {
		return r.consumed()
	}
	if r.split.lineFrom < 0 {
		from := r.consumed()
		if r.gz == nil && r.f != nil {
			if at, err := lastTermEnd(r.f, 0, from); err == nil {
				from = at
			}
		}
		r.split.lineFrom = from
	}
	return r.split.lineFrom
}

// onceEnd moves a once-read's limit back to just after the last terminator
// before it (at or after the read position): DESIGN §4 "A once-read's bytes
// after the last terminator are not delivered" — not even as pieces of a
// line longer than maxLineBytes, which Split would cut from them. A final
// lone '\r' is a terminator there (a once-read treats it as one, §4), and a
// "\r\n" ends at its '\n'. The bytes after it are counted in past.
func (r *reader) onceEnd() {
	from := r.readPos()
	if st, err := r.f.Stat(); err == nil && st.Size() < r.limit {
		// Shrunk since the size was taken (a resumed once-read's Limit):
		// its bytes past the end are gone, and a scan from there would
		// fail at once and leave the tail to the splitter's pieces.
		end := r.limit
		if r.onceTerm > 0 && r.onceTerm < end {
			end = r.onceTerm // the bytes after its last line were never to be delivered (review 26f A)
		}
		r.onceCut += max(end-max(st.Size(), from), 0)
		r.limit = max(st.Size(), from)
	}
	if r.limit <= from {
		return
	}
	at, err := lastTermEnd(r.f, from, r.limit)
	if err != nil {
		return // the file shrank or cannot be read: the reads fail the same way
	}
	r.past += r.limit - at
	r.limit = at
}

// lineUntaken reports whether the bytes r read past consumed() hold a
// line (or a piece of an oversized one) the splitter would take: read and
// never taken (its source's run ended between a read and the split), not
// an unterminated last line. The splitter is asked on a copy of its state:
// a trailing '\r' is held while tailing (a "\r\n"'s possible first half)
// and a line end for a once-read at its limit; a line longer than
// maxLineBytes gives pieces.
func (r *reader) lineUntaken() bool {
	start := r.start
	if r.crTaken && start < r.end && r.buf[start] == '\n' {
		start++ // the second half of a "\r\n" whose line was taken
	}
	if start >= r.end {
		return false
	}
	probe := r.split
	var found Found
	final := r.limit >= 0 && r.readPos() >= r.limit
	probe.Split(r.buf[:r.end], start, r.base, final, 1, math.MaxInt, &found)
	return found.Len() > 0
}

// heldTo is how far r has read its file as a resume point tells it
// (Resume.Size): readTo, or consumed() when a line it read was never
// taken — the bytes past consumed() are then unread, not an unterminated
// line.
func (r *reader) heldTo() int64 {
	if r.lineUntaken() {
		return r.consumed()
	}
	return r.readTo()
}

// readTo is how far r has read its file: its read position, or, for a
// once-read read to its limit, the size it read to (the bytes after its
// last terminator were looked at: an unterminated line, never a loss).
func (r *reader) readTo() int64 {
	if r.past > 0 && r.readPos() >= r.limit {
		return r.limit + r.past
	}
	return r.readPos()
}

// lastTermEnd returns the offset just after the last '\n' or '\r' of f in
// [lo, hi), or lo when there is none. It reads backwards from hi in chunks
// that grow from 4 KiB: the last terminator is usually close.
func lastTermEnd(f *os.File, lo, hi int64) (int64, error) {
	var small [4 << 10]byte
	b := small[:]
	for hi > lo {
		n := min(hi-lo, int64(len(b)))
		c := b[:n]
		if _, err := f.ReadAt(c, hi-n); err != nil {
			return lo, err
		}
		i := bytes.LastIndexByte(c, '\n')
		if j := bytes.LastIndexByte(c[i+1:], '\r'); j >= 0 {
			i += 1 + j
		}
		if i >= 0 {
			return hi - n + int64(i) + 1, nil
		}
		hi -= n
		if len(b) < 256<<10 {
			b = make([]byte, 2*len(b))
		}
	}
	return lo, nil
}

// take splits the buffered bytes into b (up to maxLines/maxBytes). It
// returns the lines found and oversized lines completed.
func (r *reader) take(found *Found, final bool, maxLines, maxBytes int) {
	found.Reset()
	if r.crTaken && r.start < r.end {
		if r.buf[r.start] == '\n' {
			r.start++ // the second half of a "\r\n" whose line was taken
			r.nlTaken = true
		}
		r.crTaken = false
	}
	from := r.start
	if r.twin != nil {
		r.leaveToTwin(final)
	}
	end := r.end
	if r.downAt > 0 {
		if r.consumed() >= r.downAt {
			// The epoch's end: the rest as first delivered (downgraded).
			r.epoch, r.positioned, r.downAt = r.downEpoch, false, 0
		} else if lim := r.downAt - r.base; lim < int64(end) {
			end, final = int(lim), true // a line ends at downAt
		}
	}
	next := r.split.Split(r.buf[:end], r.start, r.base, final, maxLines, maxBytes, found)
	if final && next > r.start && next == end && r.buf[next-1] == '\r' {
		r.crTaken = true
	}
	r.start = next
	if r.start != from {
		r.nlTaken = false // a line taken since (or left to the twin)
	}
}

// lineEnd is the offset just after the last line taken: consumed(), or
// one byte before it when the last byte taken is the '\n' that completed
// a "\r\n" whose line was taken at its '\r' (nlTaken). The pointer
// records that line's end (DESIGN §3: the offset after the last committed
// line), and the file is read to its end at consumed(): a deleted file
// whose pointer is at lineEnd, its size consumed(), has nothing pending
// (review 41 F2).
func (r *reader) lineEnd() int64 {
	if r.nlTaken {
		return r.consumed() - 1
	}
	return r.consumed()
}

// leaveToTwin skips r's first line when r.twin holds the same bytes, its
// terminator included, at the same offset: that line is the new file's, and
// delivered from there. It decides once, when the line has ended; a line
// that differs (the old file's writer ended it otherwise), or a piece of an
// oversized line, stays r's own and is delivered whole.
func (r *reader) leaveToTwin(final bool) {
	if r.split.inLong {
		r.twin = nil
		return
	}
	probe := r.split // a copy: the real split comes after
	var found Found
	next := probe.Split(r.buf[:r.end], r.start, r.base, final, 1, math.MaxInt, &found)
	if found.Len() == 0 {
		return // the line has not ended yet
	}
	twin := r.twin
	r.twin = nil
	n := next - r.start
	if found.Ends[0]-r.consumed() == int64(found.Lens[0]) {
		return // a piece: no terminator
	}
	b := make([]byte, n)
	if got, _ := twin.ReadAt(b, r.consumed()); got != n || !bytes.Equal(b, r.buf[r.start:next]) {
		return
	}
	if final && next == r.end && r.buf[next-1] == '\r' {
		r.crTaken = true
	}
	r.start = next
}

// snapshot makes r a copytruncate copy: read up to size, then closed.
func (r *reader) snapshot(size int64) {
	r.copy, r.limit = true, size
}

// read reads more bytes into the buffer; it returns how many (0 at EOF).
func (r *reader) read() (int, error) {
	if r.buf == nil {
		r.box = getBuf(r.lazyLen())
		r.buf = *r.box
	}
	if r.start > 0 {
		n := copy(r.buf, r.buf[r.start:r.end])
		r.base += int64(r.start)
		r.start, r.end = 0, n
	}
	if len(r.buf) < r.bufLen && (r.end == len(r.buf) || (r.filled && len(r.buf) < lazyStream)) {
		// A lazy buffer full of one partial line, or too small for the
		// bytes coming: grow it.
		nb := getBuf(min(2*len(r.buf), r.bufLen))
		copy(*nb, r.buf[:r.end])
		putBuf(r.box)
		r.box, r.buf = nb, *nb
	}
	space := r.buf[r.end:]
	if r.limit >= 0 {
		left := r.limit - r.readPos()
		if left <= 0 {
			return 0, nil
		}
		if int64(len(space)) > left {
			space = space[:left]
		}
	}
	if len(space) == 0 {
		return 0, nil
	}
	var n int
	var err error
	if r.gz != nil {
		// Sequential: the stream is at readPos.
		// The space never passes the decompressed size (the limit): any
		// error, an early end included, means the file changed since it
		// was checked to end cleanly. Stop there; the bytes it held past
		// that point are counted lost (gzLost).
		n, err = io.ReadFull(r.gz, space)
		if err != nil {
			stop := r.readPos() + int64(n)
			r.gzLost = max(r.limit-stop, 0)
			r.limit, err = stop, nil
		}
	} else {
		n, err = r.f.ReadAt(space, r.readPos())
	}
	r.end += n
	r.filled = n == len(space)
	if n > 0 {
		r.grewAt = time.Now()
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// A lazy buffer's sizes: at least lazyMin, grown by full reads up to
// lazyStream (a file being read through), by a line that does not fit up to
// bufLen.
const lazyMin, lazyStream = 4 << 10, 64 << 10

// lazyLen is the size of a lazy buffer taken for the next read: the bytes
// the last look saw waiting (lastSize past the read position), rounded up
// to a power of two from lazyMin to lazyStream. Thousands of glob streams
// holding a short line each then borrow 4 KiB each, not 64 KiB; a file
// that grew since that look fills its buffer and the next read doubles it.
func (r *reader) lazyLen() int {
	n := lazyMin
	for n < lazyStream && int64(n) <= r.lastSize-r.readPos() {
		n *= 2
	}
	return min(n, r.bufLen)
}

func (r *reader) close() {
	if r.gz != nil {
		r.gz.Close()
		r.gz = nil
	}
	if r.f != nil {
		// Uncounted before the close: holds(key) promises that no other
		// file can have the inode, and a scan takes a file at an open
		// stream's key for that stream's own on that promise (sameFile).
		// Counted until after the close, a file created in between on
		// the freed inode was taken for the stream's, read to its end
		// already: its lines were never read (CI, TestRev9COKRenameOverDelivered).
		if r.keys != nil {
			r.keys.done(r.key)
		}
		r.f.Close()
		r.f = nil
		if r.keys != nil && r.keys.closed != nil {
			r.keys.closed(r.key)
		}
	}
}

// refreshFingerprint re-reads the first bytes through the descriptor. It
// reports false when the bytes it covered before now hash differently (the
// content was replaced in place); otherwise it grows the fingerprint up to
// pointer.MaxFingerprint bytes.
func (r *reader) refreshFingerprint(size int64) (bool, error) {
	if r.gz != nil {
		return true, nil // a snapshot: its fingerprint is its head's
	}
	n := int(min(size, pointer.MaxFingerprint))
	if n < r.fpLen {
		return false, nil // shorter than what we fingerprinted: truncated
	}
	// Read even when the size is unchanged: a same-size rewrite moves only
	// the mtime (DESIGN §4 "Same-size rewrites"); callers ask only when the
	// size or mtime moved.
	var b [pointer.MaxFingerprint]byte
	got, err := r.f.ReadAt(b[:n], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return true, err
	}
	if got < r.fpLen {
		return false, nil
	}
	if r.fpLen > 0 && pointer.Fingerprint(b[:r.fpLen]) != r.fp {
		return false, nil
	}
	r.fpLen, r.fp = got, pointer.Fingerprint(b[:got])
	return true, nil
}

// headStat takes r's first bytes (up to pointer.MaxFingerprint, as its
// fingerprint) and its fstat so that both describe one content: the first
// bytes are read before the stat and again after it, and the pair is kept
// when the second read still begins with the first (a file growing
// meanwhile is fine). A file cut between them (a copytruncate) is taken
// again, up to 8 times; then the last pair stands. Read after the stat
// alone, a cut in between left a reader that had seen N bytes with the
// first bytes of the emptied file: its copy was not recognised and the N
// bytes were counted lost though the copy held them (a kill -9 soak with
// logrotate's copytruncate, forty-first session). It returns the first
// bytes; hook (nil: none) runs right after each stat (tests).
func (r *reader) headStat(hook func(string)) ([]byte, os.FileInfo, error) {
	var b1, b2 [pointer.MaxFingerprint]byte
	var head []byte
	var st os.FileInfo
	for try := 0; try < 8; try++ {
		n1, err := r.f.ReadAt(b1[:], 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, err
		}
		if st, err = r.f.Stat(); err != nil {
			return nil, nil, err
		}
		if hook != nil {
			hook("stat")
		}
		n2, err := r.f.ReadAt(b2[:min(st.Size(), pointer.MaxFingerprint)], 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, err
		}
		head = b2[:n2]
		if int64(n2) == min(st.Size(), pointer.MaxFingerprint) && n1 <= n2 && bytes.Equal(b1[:n1], b2[:n1]) {
			break
		}
	}
	head = append([]byte(nil), head...)
	r.fpLen, r.fp = len(head), pointer.Fingerprint(head)
	r.lastSize, r.lastMod = st.Size(), st.ModTime()
	r.openCheck = true
	return head, st, nil
}

// errPathChanged: the path named another file at every try of openStable.
var errPathChanged = errors.New("file: path changed while opening")

// openStable opens path so that the descriptor is the file the path named
// both before and after the open (the open race: a file replaced between stat
// and open is retried, never labelled with another file's identity).
func openStable(path string, hook func()) (*os.File, uint64, uint64, error) {
	var lastErr error
	for try := 0; try < 8; try++ {
		dev1, ino1, err := statInput(path) // never opens what is not a regular file
		if err != nil {
			return nil, 0, 0, err
		}
		if hook != nil {
			hook()
		}
		f, err := fileutil.OpenRegular(path)
		if errors.Is(err, fileutil.ErrNotRegular) {
			lastErr = err // replaced since the stat: look again
			continue
		}
		if err != nil {
			return nil, 0, 0, err
		}
		dev, ino, err := fileutil.DevIno(f)
		if err != nil {
			f.Close()
			return nil, 0, 0, err
		}
		dev2, ino2, err2 := fileutil.DevInoPath(path)
		if dev == dev1 && ino == ino1 && err2 == nil && dev2 == dev && ino2 == ino {
			return f, dev, ino, nil
		}
		f.Close()
		lastErr = errPathChanged
	}
	return nil, 0, 0, lastErr
}

// fill builds a batch from the reader's buffered lines, or returns nil.
func fillBatch(r *reader, found *Found, final bool, maxLines, maxBytes int, feedName, path string) (*feed.Batch, int) {
	r.take(found, final, maxLines, maxBytes)
	if found.Len() == 0 {
		return nil, 0
	}
	b := feed.NewBatch()
	b.Feed, b.Path, b.Epoch, b.Positioned = feedName, path, r.epoch, r.positioned
	b.SetLines(r.buf, found.Starts, found.Lens, found.Ends)
	if r.positioned {
		b.Start = r.base + int64(found.Starts[0])
	}
	return b, found.Oversized
}

// Read buffers are pooled: a glob feed's caught-up streams give theirs back
// while they wait (releaseBuf), so memory grows with busy files, not with
// open ones.
// A buffer travels with its box (the *[]byte the pool holds), so that
// giving it back allocates nothing: a glob stream gives its buffer back at
// every wait, hundreds of times a second per stream while a start's lines
// are acknowledged.
var bufPool sync.Map // buffer length → *sync.Pool (other lengths)

// lazyPools hold the lazy buffers' lengths (lazyMin to lazyStream, powers
// of two) without a map look-up (an int key in an interface allocates).
var lazyPools [5]sync.Pool

func poolOf(n int) *sync.Pool {
	if n >= lazyMin && n <= lazyStream && n&(n-1) == 0 {
		return &lazyPools[bits.TrailingZeros(uint(n))-bits.TrailingZeros(lazyMin)]
	}
	p, ok := bufPool.Load(n)
	if !ok {
		p, _ = bufPool.LoadOrStore(n, &sync.Pool{})
	}
	return p.(*sync.Pool)
}

func getBuf(n int) *[]byte {
	if b, ok := poolOf(n).Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, n)
	return &b
}

// releaseBuf gives the buffer back while nothing is buffered.
func (r *reader) releaseBuf() {
	if r.buf == nil || r.start != r.end {
		return
	}
	b := r.box
	r.buf, r.box = nil, nil
	r.base += int64(r.end)
	r.start, r.end = 0, 0
	putBuf(b)
}

func putBuf(b *[]byte) {
	if b == nil {
		return // not a pooled buffer
	}
	poolOf(len(*b)).Put(b)
}
