package file

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"tailfeed/internal/fileutil"
	"tailfeed/pointer"
)

// Later generations (DESIGN §4 "Restart after rotation: every generation
// still on disk", "While running, too", "Symlinks").
//
// A generation is a file beside the input (or beside a symlinked input's
// final target) whose base name matches rotatedNames: logrotate's app.log.1,
// app.log.2.gz, app.log-20261201. At open, after the pointer's own file is
// read from the pointer to its end, every generation modified at or after
// the reference minus mtimeSlack is read from its start, oldest first, each
// under a new epoch, before the file at the path. While running, the same
// scan runs whenever the path names a file not seen before; there a
// generation the source already saw (by identity, or a .gz by the
// fingerprint of a file it saw) is never read again.

// mtimeSlack: a generation modified this long before the reference is still
// read (coarse file-system timestamps; a writer finishing the old file just
// after the rotation). Reading a file twice is a duplicate, never a gap.
const mtimeSlack = 2 * time.Second

// genDir is a directory searched for generations and copies, with the base
// name the input has there.
type genDir struct{ dir, base string }

// genDirs are the path's directory under the path's base name and, when the
// path is a symlink, the final target's directory under the target's base
// name (DESIGN §4 "Symlinks"). The link is resolved at every call.
func (s *Source) genDirs() []genDir {
	path := s.cfg.Path
	if s.resuming && s.cfg.DeliveryPath != "" {
		// A glob stream given a gone file's pointer at the start whose own
		// file was renamed before its source started: the pointer's file
		// and its later generations rotate beside the path the stream was
		// matched under, not beside its file's new name.
		path = s.cfg.DeliveryPath
	}
	dirs := []genDir{{filepath.Dir(path), filepath.Base(path)}}
	if t, link := resolveLink(path); link {
		d := genDir{filepath.Dir(t), filepath.Base(t)}
		if d != dirs[0] {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// resolveLink follows every symlink hop of p, even when the final target
// does not exist (a dangling link still names where its generations are);
// link is false when p is not a symlink.
func resolveLink(p string) (target string, link bool) {
	for hop := 0; hop < 40; hop++ {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			break
		}
		t, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p, link = filepath.Clean(t), true
	}
	if link {
		if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			p = filepath.Join(d, filepath.Base(p))
		}
	}
	return p, link
}

// dateRe is a date in a rotated name (logrotate's dateext with dashes; an
// all-digit date such as 20261201 is matched as digits).
const dateRe = `\d{4}-\d{2}-\d{2}(?:[-_T]\d{2,6})?`

// defaultSuffix is what the default rotatedNames allows after the input's
// base name: '.' or '-', then digits, a date, or both, optionally ".gz".
var defaultSuffix = regexp.MustCompile(`^[.-](?:\d+|` + dateRe + `)(?:[._-](?:\d+|` + dateRe + `))?(?:\.gz)?$`)

// rotatedName reports whether name, in a directory where the input's base
// name is base, is one of its generations.
func (s *Source) rotatedName(name, base string) bool {
	return isRotatedName(s.cfg.RotatedNames, name, base)
}

// isRotatedName: name is a generation of base under the rotatedNames
// globs (none: the default suffixes).
func isRotatedName(globs []string, name, base string) bool {
	if name == base {
		return false
	}
	if len(globs) > 0 {
		for _, g := range globs {
			if ok, _ := filepath.Match(g, name); ok {
				return true
			}
		}
		return false
	}
	return strings.HasPrefix(name, base) && defaultSuffix.MatchString(name[len(base):])
}

// rank orders generations of the same mtime: a higher number first (older
// in logrotate's numbering), an earlier date first.
type rank struct {
	date string // "" when the suffix is a number
	num  int64
}

var dateDigits = regexp.MustCompile(`^(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:[0-2]\d|3[01])(?:\d{2,6})?$`)

func rankOf(name, base string) rank {
	suf := strings.TrimSuffix(strings.TrimPrefix(name, base), ".gz")
	suf = strings.TrimLeft(suf, ".-")
	if n, err := strconv.ParseInt(suf, 10, 64); err == nil && !dateDigits.MatchString(suf) {
		return rank{num: n}
	}
	// Dates compare by their digits: 2026-12-02 after 20261201.
	return rank{date: strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, suf) + "~"}
}

// before reports whether a generation of rank a is read before one of b.
func (a rank) before(b rank) bool {
	switch {
	case a.date == "" && b.date == "":
		return a.num > b.num
	case a.date != "" && b.date != "":
		return a.date < b.date
	}
	return a.date == "" // numbered ones before dated ones
}

// genFile is a generation found by a scan.
type genFile struct {
	path     string
	dev, ino uint64
	mod      time.Time
	rank     rank
	gz       bool
	head     []byte    // gz: the first decompressed bytes (up to MaxFingerprint)
	dsize    int64     // gz: the decompressed size
	last     [2]byte   // gz: the last two decompressed bytes
	found    int64     // its size when found
	scanned  time.Time // when the directory listing that found it began
	size     int64     // torn: the compressed size last seen
	grewAt   time.Time // torn: when it was first seen or last grew
	// heldTwin, torn: the identity of a file of its name the source read
	// when it was noted torn, too short then to tell whether it is its
	// twin (zero: none, or let go since: its bytes are not that file's);
	// twinPath, twinHead: that file's name then and its first bytes (up to
	// 4 KiB), taken again at every look while it is there (followTwin).
	heldTwin [2]uint64
	twinPath string
	twinHead []byte
}

// gzHead decompresses the first bytes of the .gz at path (up to
// MaxFingerprint): cheap, to match a fingerprint before inspectGz reads it
// all.
func gzHead(path string) ([]byte, bool) {
	f, err := fileutil.OpenRegular(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	return gzHeadAt(f)
}

// gzHeadAt is gzHead of the .gz f (read from its start).
func gzHeadAt(f io.ReaderAt) ([]byte, bool) {
	zr, err := gzip.NewReader(bufio.NewReaderSize(io.NewSectionReader(f, 0, math.MaxInt64), 16<<10))
	if err != nil {
		return nil, false
	}
	defer zr.Close()
	var hb [pointer.MaxFingerprint]byte
	n, err := io.ReadFull(zr, hb[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, false
	}
	return append([]byte(nil), hb[:n]...), true
}

// inspectGz decompresses the .gz at path to its end: ok when it ends
// cleanly (a .gz being written is skipped until the next look), with its
// first decompressed bytes and its decompressed size.
func inspectGz(path string) (head []byte, dsize int64, ok bool) {
	hw, ok := readGz(path)
	if !ok {
		return nil, 0, false
	}
	return hw.head, hw.n, true
}

// readGz decompresses the .gz at path to its end (false: torn, or not
// one).
func readGz(path string) (headWriter, bool) {
	f, err := fileutil.OpenRegular(path)
	if err != nil {
		return headWriter{}, false
	}
	defer f.Close()
	return readGzAt(f)
}

// readGzAt is readGz of the .gz f (read from its start).
func readGzAt(f io.ReaderAt) (headWriter, bool) {
	var hw headWriter
	zr, err := gzip.NewReader(bufio.NewReaderSize(io.NewSectionReader(f, 0, math.MaxInt64), 64<<10))
	if err != nil {
		return hw, false
	}
	defer zr.Close()
	if _, err := io.Copy(&hw, zr); err != nil {
		return hw, false // io.ErrUnexpectedEOF: torn
	}
	return hw, true
}

// headWriter keeps the first MaxFingerprint bytes written and the last
// two, and counts all.
type headWriter struct {
	head []byte
	last [2]byte
	n    int64
}

func (w *headWriter) Write(b []byte) (int, error) {
	if k := pointer.MaxFingerprint - len(w.head); k > 0 {
		w.head = append(w.head, b[:min(k, len(b))]...)
	}
	switch {
	case len(b) >= 2:
		w.last = [2]byte{b[len(b)-2], b[len(b)-1]}
	case len(b) == 1:
		w.last = [2]byte{w.last[1], b[0]}
	}
	w.n += int64(len(b))
	return len(b), nil
}

// endsAfterLine: a file of size bytes is read to its end by a pointer at
// end, just after its last line: size is end, or end+1 with "\r\n" as its
// last two bytes (tail gives them) — the '\n' completing a "\r\n" whose
// line was taken at its '\r' (reader.nlTaken; review 41 F2: the pointer
// stays after the line, DESIGN §3).
func endsAfterLine(size, end int64, tail func() ([2]byte, bool)) bool {
	if size == end {
		return true
	}
	if size != end+1 || end < 1 {
		return false
	}
	b, ok := tail()
	return ok && b == [2]byte{'\r', '\n'}
}

// fileTail gives the two bytes of f before size (endsAfterLine).
func fileTail(f io.ReaderAt, size int64) func() ([2]byte, bool) {
	return func() ([2]byte, bool) {
		var b [2]byte
		n, _ := f.ReadAt(b[:], size-2)
		return b, n == 2
	}
}

// knownTail gives b (endsAfterLine: a .gz's last decompressed bytes).
func knownTail(b [2]byte) func() ([2]byte, bool) {
	return func() ([2]byte, bool) { return b, true }
}

// headMatches reports whether a fingerprint of fpLen bytes matches head,
// the first bytes of a file (up to MaxFingerprint). fpLen 0 matches
// nothing.
func headMatches(head []byte, fpLen uint64, fp uint64) bool {
	return fpLen > 0 && fpLen <= uint64(len(head)) && pointer.Fingerprint(head[:fpLen]) == fp
}

// scanGenerations lists the generations modified at or after ref minus
// mtimeSlack (every one when ref is zero), and not created before born
// where the file system reports creation times (zero: no such filter)
// unless modified at or after ref, oldest first, ties by rank. skip
// rejects an identity (the file at the path, the pointer's generation, files
// the source holds); skipGz a compressed one by its decompressed first bytes.
// A .gz whose plain twin exists is left out; one that does not end cleanly
// too, and it is looked at again at the next poll (retryTorn).
//
// A directory is listed, then each name looked at: a rotation running in
// between (logrotate's shift, app.log.1 to app.log.2, …) made names name
// other files than listed, and a generation could be left out of the scan
// — never queued nor counted, lossless true (the e2e soak's third
// mechanism, TestAud2XKill9RenameRotationsSoakGap, nineteenth session). So
// the names are listed again after the scan, and the scan is made again
// (up to scanTries times) until no name changed its file meanwhile.
func (s *Source) scanGenerations(ref, born time.Time, skip func(dev, ino uint64) bool, skipGz func(head []byte) bool) []genFile {
	var out []genFile
	for try := 0; try < scanTries; try++ {
		var ids map[string][2]uint64
		out, ids = s.scanGenerationsOnce(ref, born, skip, skipGz)
		if maps.Equal(ids, s.genNames()) {
			break
		}
		s.log.Debug("the generations were renamed while scanned (a rotation running); scanning again", "path", s.cfg.Path)
	}
	return out
}

// twinReadInstead: the .gz at p is left out of the generations for its
// plain twin (gzTwin: the file of its name holding every first byte the
// .gz has), read instead — as a generation (its name is one beside the
// input, rotatedNames) or by a glob stream (the glob matches it). Another
// file of its name (a later generation, one sharing only a header) is no
// twin: the .gz is a generation of its own (review 24d B). Nor is a twin
// nobody reads (rotatedNames naming only .gz files, the glob not matching
// it): the .gz is read (review 24d D). Before, any file of its name left
// the .gz out, and such a generation was read by nobody.
//
// held names the files the source reads otherwise (nil: none): the
// pointer's own file found by its key, the file at the path, one it holds.
// A twin that is one of them is read instead whatever its name (review 25a
// A: rotatedNames naming only .gz files, the pointer's file rotated beside
// the path and being compressed — its .gz was read again, whole).
func (s *Source) twinReadInstead(p string, held func(dev, ino uint64) bool) bool {
	var dirs [][2]string
	for _, gd := range s.genDirs() {
		dirs = append(dirs, [2]string{gd.dir, gd.base})
	}
	return twinRead(p, s.cfg.RotatedNames, dirs, s.cfg.globFiles, held)
}

// twinRead is twinReadInstead for the generation directories dirs
// (directory, base name), rotatedNames globs, a glob's matcher (nil: none)
// and held; readGaps asks it for the path's source.
func twinRead(p string, globs []string, dirs [][2]string, matched func(string) bool, held func(dev, ino uint64) bool) bool {
	twin := strings.TrimSuffix(p, ".gz")
	read := matched != nil && matched(twin)
	for _, d := range dirs {
		if d[0] == filepath.Dir(p) && isRotatedName(globs, filepath.Base(twin), d[1]) {
			read = true
		}
	}
	t, told := gzTwinTold(p)
	if !read && held != nil && told {
		// (Only a twin told by its bytes: while the .gz is too short to
		// tell, a file the source read of its name may be another one —
		// review 25c F; the .gz is noted torn and looked at again.)
		if dev, ino, err := fileutil.DevInoPath(twin); err == nil && held(dev, ino) {
			read = true
		}
	}
	return read && t != ""
}

// untoldTwin is the identity of the file of the .gz at p's name when held
// rejects it (a file the source reads) and the .gz is too short to tell
// whether it is its twin; zero otherwise.
func untoldTwin(p string, held func(dev, ino uint64) bool) [2]uint64 {
	twin := strings.TrimSuffix(p, ".gz")
	if t, told := gzTwinTold(p); t == "" || told || held == nil {
		return [2]uint64{}
	}
	if dev, ino, err := fileutil.DevInoPath(twin); err == nil && held(dev, ino) {
		return [2]uint64{dev, ino}
	}
	return [2]uint64{}
}

// noteTwin records id (untoldTwin; zero: none) as g's heldTwin, with the
// first bytes of the file of g's name.
func (s *Source) noteTwin(g *genFile, id [2]uint64) {
	if id == ([2]uint64{}) {
		return
	}
	g.heldTwin, g.twinPath = id, strings.TrimSuffix(g.path, ".gz")
	s.followTwin(g)
}

// followTwin decompresses g's first bytes so far, then takes heldTwin's
// first bytes again (twinHeadNow), and lets heldTwin go once g's bytes are
// not all its first bytes (tellTwin).
func (s *Source) followTwin(g *genFile) {
	if g.heldTwin == ([2]uint64{}) {
		return
	}
	f, err := fileutil.OpenRegular(g.path)
	if err != nil {
		return
	}
	defer f.Close()
	s.followTwinAt(g, f)
}

// followTwinAt is followTwin on f, the .gz of g already open.
func (s *Source) followTwinAt(g *genFile, f io.ReaderAt) {
	if g.heldTwin == ([2]uint64{}) {
		return
	}
	head, ok := gzHeadAt(f)
	s.twinHeadNow(g)
	if ok {
		g.tellTwin(head)
	}
}

// twinHeadNow takes heldTwin's first bytes (up to 4 KiB) again — from the
// reader holding it, else at twinPath while that names it (one open, its
// identity checked on the descriptor) — keeping a longer prefix. Taken after g's
// bytes were read: a file a compressor reads only grows (an append between
// that read and this one is in neither or in the twin only), so the twin's
// first bytes then cover every byte its compressor read. Taken before
// (review 44 F1, F2), a line appended to the twin after its first bytes
// were taken and compressed with it made the whole .gz longer than them: let
// go as not the twin's, and read beside it — its lines twice.
func (s *Source) twinHeadNow(g *genFile) {
	take := func(b []byte, err error) {
		// Only a longer prefix: a file of its identity whose first bytes
		// do not begin with those taken before is another file on its
		// reused inode (the twin unlinked and closed, the path's next file
		// made on it), not the twin grown.
		if err == nil && len(b) >= len(g.twinHead) && bytes.HasPrefix(b, g.twinHead) {
			g.twinHead = b
		}
	}
	for _, r := range append(append([]*reader{s.cur}, s.next...), s.old...) {
		if r != nil && r.f != nil && r.gz == nil && [2]uint64{r.dev, r.ino} == g.heldTwin {
			take(readHeadAt(r.f))
			return
		}
	}
	f, err := fileutil.OpenRegular(g.twinPath)
	if err != nil {
		return
	}
	defer f.Close()
	if dev, ino, err := fileutil.DevIno(f); err == nil && g.heldTwin == [2]uint64{dev, ino} {
		take(readHeadAt(f))
	}
}

// tellTwin lets heldTwin go once head, g's first decompressed bytes so
// far, are not all its first bytes (nothing yet: nothing to tell).
func (g *genFile) tellTwin(head []byte) {
	if g.heldTwin == ([2]uint64{}) || len(head) == 0 {
		return
	}
	if !bytes.HasPrefix(g.twinHead, head) && !(len(g.twinHead) == pointer.MaxFingerprint && bytes.HasPrefix(head, g.twinHead)) {
		g.heldTwin, g.twinPath, g.twinHead = [2]uint64{}, "", nil
	}
}

// tornLooked, when set (tests), runs in retryTorn between a torn .gz's
// twin check and its decompression.
var tornLooked func(path string)

// scanTries bounds scanGenerations' looks while rotations keep running.
const scanTries = 5

// scanListed, when set (tests), runs right after a generation scan listed
// a directory, before it looks at the names.
var scanListed func(dir string)

// genNames maps each generation name beside the input (genDirs, rotated
// names) to the identity it names now.
func (s *Source) genNames() map[string][2]uint64 {
	out := map[string][2]uint64{}
	for _, gd := range s.genDirs() {
		ents, err := os.ReadDir(gd.dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || !s.rotatedName(e.Name(), gd.base) {
				continue
			}
			p := filepath.Join(gd.dir, e.Name())
			if dev, ino, err := fileutil.DevInoPath(p); err == nil {
				out[p] = [2]uint64{dev, ino}
			}
		}
	}
	return out
}

// scanGenerationsOnce is one scan (scanGenerations), with the identity each
// listed generation name had when looked at.
func (s *Source) scanGenerationsOnce(ref, born time.Time, skip func(dev, ino uint64) bool, skipGz func(head []byte) bool) ([]genFile, map[string][2]uint64) {
	var out []genFile
	ids := map[string][2]uint64{}
	seen := map[[2]uint64]bool{}
	for _, gd := range s.genDirs() {
		now := time.Now() // every file this listing shows was born before it
		ents, err := os.ReadDir(gd.dir)
		if err != nil {
			continue
		}
		if scanListed != nil {
			scanListed(gd.dir)
		}
		own := s.outs.scan(gd.dir)
		for _, e := range ents {
			name := e.Name()
			if !e.Type().IsRegular() || !s.rotatedName(name, gd.base) {
				continue
			}
			p := filepath.Join(gd.dir, name)
			info, dev, ino, err := fileutil.StatDevIno(p) // one stat: its times and size are that file's
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			ids[p] = [2]uint64{dev, ino}
			id := [2]uint64{dev, ino}
			if seen[id] || own.has(gd.dir, name, dev, ino) || skip(dev, ino) {
				continue
			}
			seen[id] = true
			if !ref.IsZero() && info.ModTime().Before(ref.Add(-mtimeSlack)) {
				continue
			}
			if !born.IsZero() && info.ModTime().Before(ref) {
				// Created before the pointer's generation and last modified
				// before it was: an earlier one (its mtime within the
				// slack), not a later one. Not one modified since (at or
				// after ref): a copytruncate's original keeps its inode, so
				// it is born before every copy of it, and its refill is
				// newer than the copy the pointer names (read on in after a
				// live copytruncate, or moved back onto at a restart) —
				// read (at worst a duplicate), never skipped.
				if b := birthTimePath(p); !b.IsZero() && b.Before(born) {
					continue
				}
			}
			g := genFile{path: p, dev: dev, ino: ino, mod: info.ModTime(), rank: rankOf(name, gd.base), found: info.Size(), scanned: now}
			if strings.HasSuffix(name, ".gz") {
				if s.twinReadInstead(p, skip) {
					s.log.Debug("a compressed generation's plain twin still exists; reading the twin", "file", p)
					continue
				}
				if head, ok := gzHead(p); !ok || (skipGz != nil && skipGz(head)) {
					if !ok {
						s.noteTwin(&g, untoldTwin(p, skip))
						s.noteTorn(g)
					}
					continue
				}
				hw, ok := readGz(p)
				if !ok {
					s.noteTwin(&g, untoldTwin(p, skip))
					s.noteTorn(g)
					continue
				}
				g.gz, g.head, g.dsize, g.last = true, hw.head, hw.n, hw.last
			}
			out = append(out, g)
		}
	}
	slices.SortStableFunc(out, func(a, b genFile) int {
		if c := a.mod.Compare(b.mod); c != 0 {
			return c
		}
		switch {
		case a.rank.before(b.rank):
			return -1
		case b.rank.before(a.rank):
			return 1
		}
		return 0
	})
	return out, ids
}

// openGen opens a generation as a reader from its start (not queued yet;
// its epoch is given at the switch). Nil when it cannot be opened as the
// file scanned.
func (s *Source) openGen(g genFile) *reader {
	f := s.openGenFile(g)
	if f == nil {
		return nil
	}
	dev, ino := g.dev, g.ino
	if g.gz {
		r, err := s.gzReader(f, dev, ino, g.head, g.dsize, 0)
		if err != nil {
			f.Close()
			return nil
		}
		return r
	}
	r := s.newReader(f, dev, ino)
	if st, err := f.Stat(); err == nil {
		r.refreshFingerprint(st.Size())
		r.lastSize, r.lastMod = st.Size(), st.ModTime()
	}
	return r
}

// openGenFile opens the generation g found by a scan, by its identity:
// at the name the scan saw, or — renamed on since by a rotation running
// while the scan and the opens ran (logrotate's shift, app.log.3 to
// app.log.4) — at whatever name beside the input now names it (a few looks:
// a directory listed while a file is renamed may show neither name). Nil
// when no name does (deleted) or it cannot be opened. Before, a generation
// renamed between the scan and its open was skipped with a WARN only, its
// lines never read while the feed stayed lossless, and the run's noteSeen
// made it "seen", never read by a later scan either.
//
// The identity is device and inode, and the file must still be the one
// found: a deleted generation's inode is handed to the next file created
// (ext4 reuses it at once — logrotate's `create` makes the new input with
// it), so a file born after the scan, a plain one shorter than it was
// found, or a .gz whose first decompressed bytes differ is another file:
// the generation is gone (counted by the caller), never read as it.
func (s *Source) openGenFile(g genFile) *os.File {
	try := func(p string) *os.File {
		f, err := fileutil.OpenRegular(p)
		if err != nil {
			return nil
		}
		if !s.sameGen(f, p, g) {
			f.Close()
			return nil
		}
		return f
	}
	if f := try(g.path); f != nil {
		return f
	}
	for look := 0; look < 3; look++ {
		if p, ok := s.genMoved(g); ok {
			if f := try(p); f != nil {
				s.log.Info("a generation was renamed since it was found; opened under its new name", "file", g.path, "now", p)
				return f
			}
		}
	}
	return nil
}

// sameGen reports whether f, opened at p, is the generation g its scan
// found (see openGenFile).
func (s *Source) sameGen(f *os.File, p string, g genFile) bool {
	if dev, ino, err := fileutil.DevIno(f); err != nil || dev != g.dev || ino != g.ino {
		return false
	}
	if b := birthTime(f); !b.IsZero() && !g.scanned.IsZero() && b.After(g.scanned) {
		return false // created since the scan: its inode was reused
	}
	if g.gz {
		head, ok := gzHead(p)
		n := min(len(head), len(g.head))
		return ok && bytes.Equal(head[:n], g.head[:n])
	}
	st, err := f.Stat()
	return err == nil && st.Size() >= g.found // a generation does not shrink
}

// genUnread counts a generation found by a scan that could not be opened
// (deleted since, or unreadable): its lines are not read, so the feed is not
// lossless (DESIGN §4 "Nothing green over a loss"). One that was empty when
// found loses nothing.
func (s *Source) genUnread(g genFile) {
	if (!g.gz && g.found == 0) || (g.gz && g.dsize == 0) {
		s.log.Info("an empty generation could not be opened; nothing of it is lost", "file", g.path)
		return
	}
	d := fmt.Sprintf("a later generation of the input (%s) could not be opened; its lines are not read", g.path)
	s.lose(1, 0, s.epoch.Load(), d)
	s.log.Warn(d, "file", g.path)
	s.setDetail(d)
	s.lostTail = true
}

// gzReader makes a reader of the decompressed bytes of f from off: the
// bytes before off are decompressed and discarded. It is a snapshot of
// dsize bytes (read to its end, then closed, never watched).
func (s *Source) gzReader(f *os.File, dev, ino uint64, head []byte, dsize, off int64) (*reader, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		return nil, err
	}
	r := newReader(f, dev, ino, s.bufSize(), s.cfg.MaxLine) // counted once made (below)
	r.gz, r.head = zr, head
	if off > 0 {
		if _, err := io.CopyN(io.Discard, zr, off-1); err != nil {
			return nil, err
		}
		var b [1]byte
		if _, err := io.ReadFull(zr, b[:]); err != nil {
			return nil, err
		}
		r.crTaken = b[0] == '\r'
	}
	r.base = off
	r.fpLen, r.fp = len(head), pointer.Fingerprint(head)
	if st, err := f.Stat(); err == nil {
		r.lastSize, r.lastMod = st.Size(), st.ModTime()
	}
	r.snapshot(dsize)
	s.fds.add(r)
	return r, nil
}

// queueGens queues the generations found, in order, behind what is queued.
func (s *Source) queueGens(gens []genFile) {
	for _, g := range gens {
		r := s.openGen(g)
		if r == nil {
			s.genUnread(g)
			continue
		}
		r.queuedAt = time.Now()
		s.log.Info("queued a later generation of the input", "path", s.cfg.Path, "file", g.path, "compressed", g.gz)
		s.next = append(s.next, r)
		s.watchAll.Store(true)
	}
}

// findGzCopy looks beside the input (and its symlink's target) for a
// compressed generation whose decompressed bytes start with rec's
// fingerprint and hold at least its offset, not rejected by skip; the most
// recently modified wins. It returns a reader at rec's offset, or nil.
func (s *Source) findGzCopy(rec pointer.Record, skip func(dev, ino uint64) bool) *reader {
	if rec.FPLen == 0 {
		return nil
	}
	var best *genFile
	evidence := false
	for _, g := range s.scanGenerations(time.Time{}, time.Time{}, skip, func(head []byte) bool {
		return !headMatches(head, rec.FPLen, rec.FP)
	}) {
		if g.gz && g.dsize >= max(rec.Offset, int64(rec.FPLen)) && (best == nil || !g.mod.Before(best.mod)) {
			best = &g
		}
	}
	if best == nil {
		best = s.committedGz(rec, skip)
		evidence = best != nil
	}
	if best == nil {
		return nil
	}
	f, err := fileutil.OpenRegular(best.path)
	if err != nil {
		return nil
	}
	dev, ino, err := fileutil.DevIno(f)
	if err != nil || dev != best.dev || ino != best.ino {
		f.Close()
		return nil
	}
	r, err := s.gzReader(f, dev, ino, best.head, best.dsize, rec.Offset)
	if err != nil {
		f.Close()
		return nil
	}
	r.evidence = evidence
	return r
}

// committedGz is "<path>.gz" when the input's file is gone and it holds
// exactly what rec committed — its whole first bytes (the fingerprint covers
// min(offset, 4 KiB)) and a decompressed size of rec.Offset — for a glob
// stream whose file was renamed out of the glob (its path is the file's
// present name, not the one it was matched under). logrotate's create +
// compress renames app.log to app.log.1, compresses it to app.log.1.gz and
// removes it within milliseconds; the rename restarts the file's stream
// under app.log.1, and its source may look only after the removal. Its
// compressed copy is under no rotated name of app.log.1 (".gz" alone is
// no generation suffix), so the file was counted lost although every line
// had been read and committed (the thirty-eighth session's CI1). Taken as
// the file's copy it reads nothing, and the pointer is not bound to it
// (reader.evidence): the record keeps naming the stream's own file, so
// the glob forgets it, or holds it for the path's next file, as any file
// gone after its last commit (review 38b 1: bound to the .gz, a pointer
// held for logrotate's new empty file named no file of the stream, and a
// restart after the .gz went counted it lost). Nil for a .gz holding more (lines written
// after the commit: the tail is counted lost as before), or less, or
// other first bytes: the next rotation's file compressed to that name is
// another file (review 38 2), however short its shared header.
func (s *Source) committedGz(rec pointer.Record, skip func(dev, ino uint64) bool) *genFile {
	if !s.cfg.Pinned || s.cfg.DeliveryPath == "" || s.cfg.Path == s.cfg.DeliveryPath ||
		rec.Offset <= 0 || rec.FPLen == 0 || int64(rec.FPLen) != min(rec.Offset, pointer.MaxFingerprint) {
		return nil
	}
	p := s.cfg.Path + ".gz"
	info, err := os.Lstat(p) // (not a symlink: the other searches skip them too)
	if err != nil || !info.Mode().IsRegular() {
		return nil
	}
	dev, ino, err := fileutil.DevInoPath(p)
	if err != nil || skip(dev, ino) || s.outs.scan(filepath.Dir(p)).has(filepath.Dir(p), filepath.Base(p), dev, ino) {
		return nil
	}
	if head, ok := gzHead(p); !ok || !headMatches(head, rec.FPLen, rec.FP) {
		return nil // (gzHead first: an unrelated .gz is not decompressed whole)
	}
	head, dsize, ok := inspectGz(p)
	if !ok || dsize != rec.Offset {
		return nil
	}
	return &genFile{path: p, dev: dev, ino: ino, mod: info.ModTime(), found: info.Size(), scanned: time.Now(), gz: true, head: head, dsize: dsize}
}

// ptrModTime is the pointer file's mtime: its last commit.
func (s *Source) ptrModTime() time.Time {
	if st, err := os.Stat(s.ptr.Path()); err == nil {
		return st.ModTime()
	}
	return time.Time{}
}

// seen is a generation the source saw while running: never read again.
type seenGen struct {
	fpLen uint64 // plain files: their first bytes' fingerprint; 0 for .gz
	fp    uint64
	look  uint64 // the last noteSeen that found it (held, or on disk)
}

// seenHead: a file whose (decompressed) first bytes are head is a twin of
// a file the source holds or saw — the same first bytes, covering as much
// as it has (or the whole fingerprint).
func (s *Source) seenHead(head []byte) bool {
	full := func(fpLen uint64, fp uint64) bool {
		return (fpLen == uint64(len(head)) || fpLen == pointer.MaxFingerprint) && headMatches(head, fpLen, fp)
	}
	for _, sg := range s.genSeen {
		if full(sg.fpLen, sg.fp) {
			return true
		}
	}
	for _, r := range append(append([]*reader{s.cur}, s.next...), s.old...) {
		if r != nil && full(uint64(r.fpLen), r.fp) {
			return true
		}
	}
	return false
}

// seenCap bounds genSeen: past it, entries of files no longer held nor on
// disk are dropped, the longest gone first; an entry of a file still there
// is never dropped (S4: it would be read again as a generation never seen),
// so the map holds at most max(seenCap/2, the generations on disk).
const seenCap = 4096

// noteSeen records the generations present now and the files the source
// holds, so that a scan while running reads only generations it never saw
// (a .gz of a file it saw, by its first bytes, neither).
func (s *Source) noteSeen() {
	if s.cfg.Pinned {
		// A glob stream never reads another file at its path (queueLater
		// and generationsBefore are not reached): no catalogue, and no
		// listing of its directory at every open (thousands of files).
		return
	}
	if s.genSeen == nil {
		s.genSeen = map[[2]uint64]seenGen{}
	}
	s.seenLook++
	look := s.seenLook
	note := func(r *reader) {
		if r == nil || r.f == nil {
			return
		}
		id := [2]uint64{r.dev, r.ino}
		if sg, ok := s.genSeen[id]; !ok || r.gz != nil {
			s.genSeen[id] = seenGen{uint64(r.fpLen), r.fp, look}
		} else {
			sg.look = look
			s.genSeen[id] = sg
		}
	}
	note(s.cur)
	for _, r := range s.next {
		note(r)
	}
	for _, r := range s.old {
		note(r)
	}
	for p, id := range s.genNames() {
		if strings.HasSuffix(p, ".gz") {
			sg := s.genSeen[id]
			sg.look = look
			s.genSeen[id] = sg
			continue
		}
		// A plain one's first bytes as they are now: a .gz of it
		// appearing later is its twin.
		sg := seenGen{look: look}
		if b, err := readHead(p); err == nil && len(b) > 0 {
			sg.fpLen, sg.fp = uint64(len(b)), pointer.Fingerprint(b)
		}
		s.genSeen[id] = sg
	}
	if len(s.genSeen) > seenCap { // a directory of many rotations: keep it bounded
		gone := make([][2]uint64, 0, len(s.genSeen))
		for k, sg := range s.genSeen {
			if sg.look != look {
				gone = append(gone, k)
			}
		}
		slices.SortFunc(gone, func(a, b [2]uint64) int { return cmp.Compare(s.genSeen[a].look, s.genSeen[b].look) })
		for _, k := range gone {
			if len(s.genSeen) <= seenCap/2 {
				break
			}
			delete(s.genSeen, k)
		}
	}
}

// seenAtClose records in the seen catalogue the first bytes r's descriptor
// holds as it is closed for good: a file that grew after noteSeen took its
// fingerprint (written on after its rotation was seen, a short file read
// on) kept that shorter one, and a .gz of it made later matched none — the
// whole generation was read again as one never seen (review 25a D, D', F).
func (s *Source) seenAtClose(r *reader) {
	if s.genSeen == nil || r.gz != nil || r.f == nil {
		return
	}
	b := make([]byte, pointer.MaxFingerprint)
	n, err := r.f.ReadAt(b, 0)
	if n == 0 || (err != nil && !errors.Is(err, io.EOF)) {
		return
	}
	id := [2]uint64{r.dev, r.ino}
	if sg, ok := s.genSeen[id]; !ok || uint64(n) > sg.fpLen {
		s.genSeen[id] = seenGen{uint64(n), pointer.Fingerprint(b[:n]), max(sg.look, s.seenLook)}
	}
}

// readHead reads the first bytes of the file at p (up to MaxFingerprint).
func readHead(p string) ([]byte, error) {
	f, err := fileutil.OpenRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readHeadAt(f)
}

// readHeadAt reads the first bytes (up to MaxFingerprint) of f.
func readHeadAt(f io.ReaderAt) ([]byte, error) {
	b := make([]byte, pointer.MaxFingerprint)
	n, err := f.ReadAt(b, 0)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return b[:n], err
}

// queueLater runs while running, when the path names a file (fdev, fino)
// the source does not hold: the generations written since the newest file
// it holds, that it never saw, are queued before it (several rotations
// between two looks, an fsnotify overflow).
func (s *Source) queueLater(fdev, fino uint64) {
	if s.cfg.Strategy.Bounded() || s.cur == nil {
		return
	}
	newest := s.cur
	if len(s.next) > 0 {
		newest = s.next[len(s.next)-1]
	}
	ref := newest.lastMod
	skip := func(dev, ino uint64) bool {
		if (dev == fdev && ino == fino) || s.known(dev, ino) {
			return true
		}
		_, ok := s.genSeen[[2]uint64{dev, ino}]
		return ok
	}
	gens := s.scanGenerations(ref, time.Time{}, skip, func(head []byte) bool { return s.seenHead(head) })
	// A plain file whose first bytes are those of a file the source holds
	// or saw (the same rule as for a .gz: the whole fingerprint, or the
	// whole file) is a copy of it (cp, copytruncate), never a later
	// generation. A shorter match is not enough: generations may share a
	// header.
	gens = slices.DeleteFunc(gens, func(g genFile) bool {
		if g.gz {
			return false
		}
		head, err := readHead(g.path)
		if err != nil || len(head) == 0 || !s.seenHead(head) {
			return false
		}
		s.log.Info("a file beside the input is a copy of one the source holds or saw; not read as a generation", "file", g.path)
		return true
	})
	if len(gens) > 0 {
		s.log.Warn("the path names a file that is not the one expected next; reading the generations written in between first",
			"path", s.cfg.Path, "generations", len(gens))
		s.queueGens(gens)
	}
}

// headSrc is what the pointer reads r's fingerprint from: the descriptor,
// or a compressed file's first decompressed bytes.
func (r *reader) headSrc() io.ReaderAt {
	if r.gz != nil {
		return bytes.NewReader(r.head)
	}
	return r.f
}

// noteTorn remembers a .gz generation that did not end cleanly: retryTorn
// looks at it again at every poll.
func (s *Source) noteTorn(g genFile) {
	for _, t := range s.torn {
		if t.dev == g.dev && t.ino == g.ino {
			return
		}
	}
	s.log.Info("a compressed generation does not end cleanly (being written?); skipped until the next look", "file", g.path)
	if st, err := os.Stat(g.path); err == nil {
		g.size = st.Size()
	}
	g.grewAt = time.Now()
	s.torn = append(s.torn, g)
	s.tornN.Store(int32(len(s.torn)))
}

// tornWait is the least time a torn .gz that does not grow is waited for
// before it is counted lost: a compressor stalls for a moment under load.
const tornWait = 10 * time.Second

// retryTorn looks again at the .gz generations that did not end cleanly:
// one that does now, still the same file (or followed to its new name),
// not held and not the twin of a file the source holds (by first bytes),
// is read beside the current file like a switched-away file (its lines
// late and downgraded, never lost). One that is gone (not renamed on), or
// that stayed torn for rotateWait (at least tornWait) after it last grew,
// is counted lost (DESIGN §4 "Nothing green over a loss"): its lines were
// never read — unless its bytes so far were all those of the read file of
// its name beside it (heldTwin: that file's compressor's output; whole, it
// is dropped as that file's copy too). Until then the feed is not
// CAUGHT_UP.
func (s *Source) retryTorn() {
	keep := s.torn[:0]
	defer func() {
		clear(s.torn[len(keep):])
		s.torn = keep
		s.tornN.Store(int32(len(s.torn)))
	}()
	for _, g := range s.torn {
		dev, ino, err := fileutil.DevInoPath(g.path)
		if err != nil || dev != g.dev || ino != g.ino {
			// Renamed on (logrotate's shift): followed to its new name,
			// its twin looked for there at the next poll — not at its old
			// name, which may name the next generation by now (review 25a
			// B, B2: it was taken for the twin and dropped, uncounted).
			// Gone: a file of its name now is no twin read instead (noted
			// torn, it had none; review 25c E, E2: a generation rotated to
			// that name was taken for one and the loss went uncounted).
			// One whose bytes so far were all the read file's beside it
			// (heldTwin, twinHead) was that file's compressor's output,
			// removed (gzip failing: review 25b A3).
			if p, ok := s.genMoved(g); ok {
				g.path = p
				keep = append(keep, g)
			} else if g.heldTwin == ([2]uint64{}) {
				s.loseTorn(g, "a compressed generation that did not end cleanly is gone; its lines were never read")
			}
			continue
		}
		if s.known(dev, ino) {
			continue // the source holds it
		}
		// (No twin is looked for here: noted torn, it had none read
		// instead, and a compressor makes a .gz from a file already there
		// — a file of its name made since is another generation, review
		// 25b D: taken for its twin while the .gz was too short to tell,
		// the torn one was dropped, uncounted.) But one noted too short to
		// tell beside a file the source read (heldTwin) is held against
		// that file's first bytes (twinHead, taken again while it is
		// there, grown or not): while its bytes are all that file's, it is
		// that file's compressor's output (its input unlinked or not when
		// it ends: review 25f A, A2 — read again, the file having grown);
		// once they are not, heldTwin is let go (review 25d C2).
		// One descriptor for the looks that follow (review 44 F3: the
		// path opened again for each, a shift in between gave the
		// decompression another file than the identity checked).
		f, err := fileutil.OpenRegular(g.path)
		if err != nil {
			keep = append(keep, g) // renamed or gone since: the next look
			continue
		}
		if fdev, fino, err := fileutil.DevIno(f); err != nil || fdev != g.dev || fino != g.ino {
			f.Close()
			keep = append(keep, g)
			continue
		}
		s.followTwinAt(&g, f)
		if tornLooked != nil {
			tornLooked(g.path)
		}
		hw, ok := readGzAt(f)
		if !ok {
			if st, err := f.Stat(); err == nil && st.Size() != g.size {
				g.size, g.grewAt = st.Size(), time.Now()
			}
			f.Close()
			if time.Since(g.grewAt) >= max(s.cfg.RotateWait, tornWait) {
				if g.heldTwin != ([2]uint64{}) {
					// Its bytes so far all the read file's: its compressor
					// stopped (killed), shifted on since or not (review 25d
					// B, 25f C, C2: counted lost over no loss).
					s.log.Info("a compressed generation stayed torn, its bytes so far those of the plain file of its name, which was read; its compressor stopped", "file", g.path)
					continue
				}
				s.loseTorn(g, "a compressed generation stayed torn (it does not end cleanly, no growth for rotateWaitMillis and at least 10 s); its lines are not read")
				continue
			}
			keep = append(keep, g)
			continue
		}
		// Told again by the bytes just decompressed, against the twin's
		// first bytes taken after them (twinHeadNow): the check above read
		// the .gz at another instant (being written then, nothing yet
		// decompressible or a prefix of the twin's; complete now with
		// other lines, it was dropped as the twin's copy — CI of f1c560f,
		// TestRev25ERB2TornGzAtTheScanToldTwinByAHeaderPrefix).
		s.twinHeadNow(&g)
		g.tellTwin(hw.head)
		if g.heldTwin != ([2]uint64{}) || s.seenHead(hw.head) {
			// Whole, every byte the read file's: its compressed copy. Or
			// the twin of a file the source holds, or held and closed
			// since (review 25b A2: a .gz too short to tell when scanned,
			// finished after its twin was read and closed).
			f.Close()
			continue
		}
		g.gz, g.head, g.dsize, g.last = true, hw.head, hw.n, hw.last
		r, err := s.gzReader(f, g.dev, g.ino, hw.head, hw.n, 0)
		if err != nil {
			// (Counted, not dropped — review 44 F4: before, a generation
			// that could not be opened here was skipped, uncounted.)
			f.Close()
			s.genUnread(g)
			continue
		}
		// Its place in the order is past: it is read beside the current
		// file as a switched-away file is, its lines under an epoch of
		// their own and without a position (downgraded), never lost.
		s.log.Warn("a compressed generation now ends cleanly; reading it beside the current file (downgraded)", "file", g.path)
		r.epoch, r.positioned = pointer.NewEpoch(), false
		r.closeAt = time.Now()
		s.old = append(s.old, r)
		s.kick = true
	}
}

// genMoved returns where the generation g is now when it is no longer at
// its path but beside the input under another generation name (rotated on:
// app.log.1.gz to app.log.2.gz) — a torn .gz stays waited for there, a
// generation found by a scan is opened there (openGenFile).
func (s *Source) genMoved(g genFile) (string, bool) {
	for _, gd := range s.genDirs() {
		ents, err := os.ReadDir(gd.dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || !s.rotatedName(e.Name(), gd.base) {
				continue
			}
			p := filepath.Join(gd.dir, e.Name())
			if dev, ino, err := fileutil.DevInoPath(p); err == nil && dev == g.dev && ino == g.ino {
				return p, true
			}
		}
	}
	return "", false
}

// loseTorn counts a torn .gz generation that is never read: one lost tail
// (its decompressed size is unknown: lostBytes stays).
func (s *Source) loseTorn(g genFile, why string) {
	s.lose(1, 0, s.epoch.Load(), why)
	s.log.Warn(why, "file", g.path)
	s.setDetail(why)
	s.lostTail = true
}

// countGzLost counts what a .gz reader could not decompress after all (it
// ended cleanly when found, then changed): one lost tail and its bytes.
func (s *Source) countGzLost(r *reader) {
	if r.gzLost == 0 {
		return
	}
	const why = "a compressed generation could not be decompressed to its end; its rest is lost"
	s.lose(1, uint64(r.gzLost), r.epoch, why)
	s.log.Warn(why, "file", r.f.Name(), "lostBytes", r.gzLost)
	s.setDetail(why)
	r.gzLost = 0
}
