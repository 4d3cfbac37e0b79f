package pointer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"tailfeed/internal/fileutil"
)

// The epochs file (DESIGN §4, dataDir/feeds/<feed>.epochs) maps every epoch
// a pointer ever held back to its input file. It is JSON lines, one object
// per line, appended (O_APPEND, mode 0600) and fsynced before the pointer
// file itself is written (write-ahead: a crash between the two leaves a line
// for an epoch no pointer holds, never a pointer epoch without a line):
//
//	{"v":1,"epoch":"00c3a1d2e4f50617","fileKey":"9a0b…","fingerprintLength":4096,
//	 "fingerprint":"5c1d…","path":"/var/log/app.log",
//	 "time":"2026-12-01T14:03:22.123456789Z","reason":"reset",
//	 "previousEpoch":"7e12…","previousOffset":52311}
//
// v is the line's format version (EpochsFormat): a line without it (an
// older tailfeed's) is version 1; a line of a newer version is skipped and
// named in ReadEpochs' error, as a line that does not parse. epoch,
// fileKey and fingerprint are 16 lowercase hex digits; the
// fingerprint covers the input's first fingerprintLength bytes at the time
// of the line (the record grows it later, so a file matches when its first
// fingerprintLength bytes hash to it); previousEpoch and previousOffset,
// on a line that moves the pointer off another epoch (replaced, truncated,
// reset, forgotten, lost), are the record it replaces: the epoch left and
// its last committed offset — for "reset" and "forgotten" the end of that
// epoch's positioned lines, so a sink whose last applied line is
// (previousEpoch, previousOffset) has every line of it (DESIGN §11); both
// are absent on the other lines; previousFileKey,
// previousFingerprintLength and previousFingerprint (with them, when the
// record left named a file) are that record's identity — the key the
// file bound to the epoch when it was left (Bind: a copytruncate copy read
// on in, not the cut original) — : a restart with an
// empty record does not read that file again as a later generation; path is the input path the pointer
// was opened for, "" when the record names no file (fileKey 0,
// fingerprintLength 0); time is RFC 3339 UTC with nanoseconds; reason is
// one of
//
//	created   a new pointer file (no file yet: fileKey 0)
//	fresh     a pointer file with no valid slot started over
//	adopted   a record with no identity was bound to its first input file
//	          (same epoch; the line names the file); a record that stays
//	          empty is adopted at every start, recorded again only when the
//	          file differs from the last line's (key, path, first bytes)
//	replaced  the source found another file at the path at open (new epoch)
//	truncated the source found the file shorter than the offset (new epoch)
//	reset     the source switched to a new file (epoch barrier)
//	forgotten the file was deleted after every line of it was committed:
//	          an empty record (fileKey 0) under a new epoch (DESIGN §4)
//	lost      the file's unread tail was counted lost at start (ledger
//	          first) and nothing else was opened: an empty record under a
//	          new epoch, so that the next start does not count it again.
//	          With a file key and no previous epoch, written by a glob
//	          feed's start, not a pointer: a compressed generation nobody
//	          read, counted lost (fileKey, fingerprint: the .gz and its
//	          first decompressed bytes; an epoch no pointer holds), so
//	          that the next start does not count it again
//	held      the record's file was read to its end and closed with every
//	          line committed, out of the glob beside its path, and the
//	          record keeps naming it (same epoch) as the record of the
//	          path's later generations (a glob feed's pointer kept for the
//	          path's empty new file); end is the record's offset and
//	          nextFileKey that empty file's key (0: unknown). While
//	          it is the epoch's last line, nothing of that file is pending
//	          at end: a start that finds the file gone, or its key on a
//	          file shorter than end, loses nothing (DESIGN §4 "A file that
//	          was read to its end, committed and then deleted is not a
//	          lost tail"); and the empty file is named: a start that finds
//	          no file of that key beside the path counts it gone (lines
//	          written to it while tailfeed was down, if any, are lost). A
//	          start voids the line at once (below)
//	unheld    voids the epoch's "held" line: the file may be read on
//	          under the epoch again, so a later loss of it counts
//	downgraded not a pointer epoch: the epoch of its own that a file's
//	          late lines (appended after the switch, DESIGN §4 epoch
//	          barrier) are delivered under, with downgradedFrom (the
//	          pointer epoch the file was read under) and downgradedAt (the
//	          offset from which its lines carry this epoch). A catch-up
//	          that reads that file again reads its lines from there under
//	          this epoch, as first delivered (DESIGN §11). ReadEpochs leaves
//	          these lines out (they move no pointer); ReadDowngraded reads
//	          them
//
// An epoch may have several lines (created, then adopted): the last one
// names its file. Readers take what parses: a torn last line (a crash
// mid-append) is ignored. A failed append is logged at ERROR and does not
// stop the pointer: the epochs file serves catching a sink up (DESIGN §11),
// never the pointer's own recovery.

// EpochLine is one line of an epochs file.
type EpochLine struct {
	Epoch   uint64
	FileKey uint64
	FPLen   uint64
	FP      uint64
	Path    string
	Time    time.Time
	Reason  string
	// PrevEpoch is the epoch the line moves the pointer off (0: none) and
	// PrevOffset that epoch's last committed offset.
	PrevEpoch  uint64
	PrevOffset int64
	// PrevFileKey, PrevFPLen and PrevFP are the identity of the record left
	// (with PrevEpoch): for "forgotten" and "lost" the file of which nothing
	// is pending, so that a restart does not read it again as a later
	// generation (DESIGN §4).
	PrevFileKey uint64
	PrevFPLen   uint64
	PrevFP      uint64
	// DownFrom and DownAt, on a "downgraded" line only: the pointer epoch
	// the file was read under and the offset from which its lines carry
	// Epoch instead (delivered without a position).
	DownFrom uint64
	DownAt   int64
	// End, on a "held" line only: the offset the file was read to and
	// committed at (the record's); NextKey the file key of the empty file
	// at the path the record was kept for (0: unknown).
	End     int64
	NextKey uint64
}

// ReasonHeld and ReasonUnheld are the reasons of the lines that mark a
// record's file as read to its end with nothing pending, and void that.
const (
	ReasonHeld   = "held"
	ReasonUnheld = "unheld"
)

// HeldMarks maps each epoch whose last line in lines is a "held" one to
// that line.
func HeldMarks(lines []EpochLine) map[uint64]EpochLine {
	var out map[uint64]EpochLine
	for _, l := range lines {
		switch {
		case l.Reason == ReasonHeld:
			if out == nil {
				out = map[uint64]EpochLine{}
			}
			out[l.Epoch] = l
		case out != nil:
			delete(out, l.Epoch)
		}
	}
	return out
}

// ReasonDowngraded is the reason of a line naming a downgraded epoch.
const ReasonDowngraded = "downgraded"

// EpochsFormat is the format version of the epochs lines this tailfeed
// writes and the newest it reads.
const EpochsFormat = 1

// epochJSON is EpochLine as written.
type epochJSON struct {
	V       int    `json:"v"` // format version; 0 (absent) reads as 1
	Epoch   string `json:"epoch"`
	FileKey string `json:"fileKey"`
	FPLen   uint64 `json:"fingerprintLength"`
	FP      string `json:"fingerprint"`
	Path    string `json:"path"`
	// PathB64 is the path's exact bytes when they are not valid UTF-8: JSON
	// puts U+FFFD for each bad byte, and a glob stream took that other path
	// (its Delivery.Path, nats subjects) after a restart (audit 10B).
	PathB64 string `json:"pathBase64,omitempty"`
	Time    string `json:"time"`
	Reason  string `json:"reason"`
	Prev    string `json:"previousEpoch,omitempty"`
	PrevOff *int64 `json:"previousOffset,omitempty"`
	PrevKey string `json:"previousFileKey,omitempty"`
	PrevFPL uint64 `json:"previousFingerprintLength,omitempty"`
	PrevFP  string `json:"previousFingerprint,omitempty"`
	DownFr  string `json:"downgradedFrom,omitempty"`
	DownAt  *int64 `json:"downgradedAt,omitempty"`
	End     *int64 `json:"end,omitempty"`
	NextKey string `json:"nextFileKey,omitempty"`
}

// AppendEpoch appends l to the epochs file at path (created 0600 with its
// directory entry synced) and fsyncs it; it returns once l is on disk.
func AppendEpoch(path string, l EpochLine) error {
	b, err := epochLineJSON(l)
	if err != nil {
		return err
	}
	// Appends that arrive while another one's fsync runs share the next
	// write and fsync (group.go).
	return appendGrouped(path, append(b, '\n'))
}

// epochLineJSON is l as one line of the epochs file, without its newline.
func epochLineJSON(l EpochLine) ([]byte, error) {
	j := epochJSON{V: EpochsFormat,
		Epoch: hex(l.Epoch), FileKey: hex(l.FileKey), FPLen: l.FPLen, FP: hex(l.FP),
		Path: l.Path, Time: l.Time.UTC().Format(time.RFC3339Nano), Reason: l.Reason,
	}
	if !utf8.ValidString(l.Path) {
		j.PathB64 = base64.StdEncoding.EncodeToString([]byte(l.Path))
	}
	if l.PrevEpoch != 0 {
		j.Prev, j.PrevOff = hex(l.PrevEpoch), &l.PrevOffset
		if l.PrevFPLen > 0 || l.PrevFileKey != 0 {
			j.PrevKey, j.PrevFPL, j.PrevFP = hex(l.PrevFileKey), l.PrevFPLen, hex(l.PrevFP)
		}
	}
	if l.DownFrom != 0 {
		j.DownFr, j.DownAt = hex(l.DownFrom), &l.DownAt
	}
	if l.Reason == ReasonHeld {
		j.End = &l.End
		if l.NextKey != 0 {
			j.NextKey = hex(l.NextKey)
		}
	}
	return json.Marshal(j)
}

// AppendEpochs appends lines to the epochs file at path with one write and
// one fsync (shared with the appends meanwhile, group.go); it returns once
// they are on disk.
func AppendEpochs(path string, lines []EpochLine) error {
	var buf []byte
	for _, l := range lines {
		b, err := epochLineJSON(l)
		if err != nil {
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	return appendGrouped(path, buf)
}

// AppendCreated appends the "created" line of each epoch to the epochs
// file at path with one write and one fsync (shared with the appends
// meanwhile, group.go), exactly the line Open writes for a new pointer
// file under that epoch: a caller that opens those pointers afterwards
// with Options.CreatedLogged saves one fsync per pointer. An epoch whose
// pointer is never created keeps a line no pointer holds, which readers
// allow (a crash between a line and its pointer file leaves the same).
func AppendCreated(path string, epochs []uint64) error {
	var buf []byte
	now := time.Now()
	for _, e := range epochs {
		b, err := epochLineJSON(EpochLine{Epoch: e, FP: Fingerprint(nil), Time: now, Reason: "created"})
		if err != nil {
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	if len(buf) == 0 {
		return nil
	}
	return appendGrouped(path, buf)
}

// appendSync appends lines to the epochs file at path (created 0600 with
// its directory entry synced) and fsyncs it.
func appendSync(path string, lines []byte) error {
	_, statErr := os.Lstat(path)
	f, err := fileutil.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := cutTornTail(f); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(lines); err != nil {
		f.Close()
		return err
	}
	if err := syncFile(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		return syncDir(filepath.Dir(path))
	}
	return nil
}

// cutTornTail removes a torn last line from the epochs file f (bytes after
// its last newline: an append cut short by a crash, a power loss or a
// failed write) before the next append. Written after it, the next line
// would join it into one line that does not parse, and readers would skip
// both; the torn bytes are a line no append ever returned success for,
// which readers ignore anyway. Only the group's leader appends (group.go),
// so nothing writes meanwhile.
func cutTornTail(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	if end == 0 {
		return nil
	}
	var buf [4096]byte
	if _, err := f.ReadAt(buf[:1], end-1); err != nil {
		return err
	}
	if buf[0] == '\n' {
		return nil
	}
	for end > 0 {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return f.Truncate(start + int64(i) + 1)
		}
		end = start
	}
	return f.Truncate(0)
}

// ReadEpochs reads the epochs file at path, oldest line first, the
// pointer epochs' lines only (not "downgraded" ones). A missing
// file is no lines and no error. A torn last line (no newline: a crash
// mid-append) is skipped silently; another line that does not parse is
// skipped and named in the error (FILE:LINE: reason), which comes with the
// lines that did parse.
func ReadEpochs(path string) ([]EpochLine, error) {
	all, err := readEpochs(path)
	out := all[:0]
	for _, l := range all {
		if l.Reason != ReasonDowngraded {
			out = append(out, l)
		}
	}
	return out, err
}

// ReadDowngraded reads the "downgraded" lines of the epochs file at path,
// oldest first (errors as ReadEpochs').
func ReadDowngraded(path string) ([]EpochLine, error) {
	all, err := readEpochs(path)
	var out []EpochLine
	for _, l := range all {
		if l.Reason == ReasonDowngraded {
			out = append(out, l)
		}
	}
	return out, err
}

func readEpochs(path string) ([]EpochLine, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []EpochLine
	var bad []error
	br := bufio.NewReader(f)
	for n := 1; ; n++ {
		raw, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			break // "" or a torn last line
		}
		if err != nil {
			return out, err
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		l, perr := parseEpochLine(raw)
		if perr != nil {
			bad = append(bad, fmt.Errorf("%s:%d: %w", path, n, perr))
			continue
		}
		out = append(out, l)
	}
	return out, errors.Join(bad...)
}

func parseEpochLine(raw []byte) (EpochLine, error) {
	var j epochJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return EpochLine{}, err
	}
	if j.V > EpochsFormat {
		return EpochLine{}, fmt.Errorf("version %d, this tailfeed reads up to %d", j.V, EpochsFormat)
	}
	var l EpochLine
	var err error
	if l.Epoch, err = parseHex("epoch", j.Epoch); err != nil {
		return l, err
	}
	if l.Epoch == 0 {
		return l, errors.New("epoch 0")
	}
	if l.FileKey, err = parseHex("fileKey", j.FileKey); err != nil {
		return l, err
	}
	if l.FP, err = parseHex("fingerprint", j.FP); err != nil {
		return l, err
	}
	if j.FPLen > MaxFingerprint {
		return l, fmt.Errorf("fingerprintLength %d > %d", j.FPLen, MaxFingerprint)
	}
	if l.Time, err = time.Parse(time.RFC3339Nano, j.Time); err != nil {
		return l, fmt.Errorf("time: %w", err)
	}
	l.FPLen, l.Path, l.Reason = j.FPLen, j.Path, j.Reason
	if j.PathB64 != "" {
		p, err := base64.StdEncoding.DecodeString(j.PathB64)
		if err != nil {
			return l, fmt.Errorf("pathBase64: %w", err)
		}
		l.Path = string(p)
	}
	if j.Prev != "" {
		if l.PrevEpoch, err = parseHex("previousEpoch", j.Prev); err != nil {
			return l, err
		}
		if j.PrevOff == nil || *j.PrevOff < 0 {
			return l, errors.New("previousEpoch without a previousOffset of at least 0")
		}
		l.PrevOffset = *j.PrevOff
		if j.PrevKey != "" {
			if l.PrevFileKey, err = parseHex("previousFileKey", j.PrevKey); err != nil {
				return l, err
			}
			if l.PrevFP, err = parseHex("previousFingerprint", j.PrevFP); err != nil {
				return l, err
			}
			if j.PrevFPL > MaxFingerprint {
				return l, fmt.Errorf("previousFingerprintLength %d > %d", j.PrevFPL, MaxFingerprint)
			}
			l.PrevFPLen = j.PrevFPL
		}
	}
	if j.DownFr != "" {
		if l.DownFrom, err = parseHex("downgradedFrom", j.DownFr); err != nil {
			return l, err
		}
		if j.DownAt == nil || *j.DownAt < 0 {
			return l, errors.New("downgradedFrom without a downgradedAt of at least 0")
		}
		l.DownAt = *j.DownAt
	}
	if l.Reason == ReasonHeld {
		if j.End == nil || *j.End < 0 {
			return l, errors.New("a held line without an end of at least 0")
		}
		l.End = *j.End
		if j.NextKey != "" {
			if l.NextKey, err = parseHex("nextFileKey", j.NextKey); err != nil {
				return l, err
			}
		}
	}
	return l, nil
}

func parseHex(field, s string) (uint64, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("%s %q: want 16 hex digits", field, s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", field, s, err)
	}
	return v, nil
}

// logEpoch appends the current record's identity to the epochs file, if
// one is configured, with prev, the record it replaces, when that is of
// another epoch. Called with p.mu held, before the record is written to
// the slots. A failure is logged as an ERROR and returned: for a new epoch
// (reset) the line is owed (p.owedLines) and no slot may hold the epoch
// until it is fsynced (DESIGN §4, write-ahead).
func (p *Pointer) logEpoch(r Record, reason string, prev Record) error {
	if p.epochs == "" {
		return nil
	}
	path := p.input
	if r.FileKey == 0 && r.FPLen == 0 {
		path = ""
	}
	l := EpochLine{
		Epoch: r.Epoch, FileKey: r.FileKey, FPLen: r.FPLen, FP: r.FP,
		Path: path, Time: time.Now(), Reason: reason,
	}
	if prev.Epoch != 0 && prev.Epoch != r.Epoch {
		l.PrevEpoch, l.PrevOffset = prev.Epoch, prev.Offset
		l.PrevFileKey, l.PrevFPLen, l.PrevFP = prev.FileKey, prev.FPLen, prev.FP
	}
	p.owedLines = append(p.owedLines, l)
	return p.flushOwedLines()
}

// flushOwedLines appends the epochs lines not yet written (in order); a
// failure keeps them owed. Called with p.mu held.
func (p *Pointer) flushOwedLines() error {
	for len(p.owedLines) > 0 {
		l := p.owedLines[0]
		if err := AppendEpoch(p.epochs, l); err != nil {
			p.log.Error("epochs file append failed; the pointer does not take the epoch until its line is written",
				"epochs", p.epochs, "epoch", hex(l.Epoch), "error", err)
			return fmt.Errorf("pointer: epochs file %s: line for epoch %s: %w", p.epochs, hex(l.Epoch), err)
		}
		p.owedLines = p.owedLines[1:]
	}
	p.owedLines = nil
	return nil
}

// LogDowngraded appends a "downgraded" line to the epochs file, if one is
// configured: the lines of the file (key, first fpLen bytes hashing to fp,
// at path) read under the pointer epoch from are delivered under epoch,
// without a position, from offset at on (DESIGN §4 epoch barrier). A
// failure is an ERROR: a catch-up through that file then reads those lines
// under from's epoch again (duplicates for a postgres inbox, never a gap).
func (p *Pointer) LogDowngraded(epoch, from uint64, at int64, key, fpLen, fp uint64, path string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.epochs == "" || epoch == 0 || from == 0 {
		return
	}
	l := EpochLine{Epoch: epoch, FileKey: key, FPLen: fpLen, FP: fp, Path: path, Time: time.Now(),
		Reason: ReasonDowngraded, DownFrom: from, DownAt: at}
	if err := AppendEpoch(p.epochs, l); err != nil {
		p.log.Error("epochs file append failed; a catch-up through this file would read its late lines under the old epoch",
			"epochs", p.epochs, "epoch", hex(epoch), "error", err)
	}
}

// Downgraded returns the first "downgraded" line of the epochs file whose
// lines were read under the pointer epoch from (false: none).
func (p *Pointer) Downgraded(from uint64) (EpochLine, bool) {
	p.mu.Lock()
	path := p.epochs
	p.mu.Unlock()
	if path == "" || from == 0 {
		return EpochLine{}, false
	}
	lines, _ := ReadDowngraded(path)
	for _, l := range lines {
		if l.DownFrom == from {
			return l, true
		}
	}
	return EpochLine{}, false
}

// Left returns the epochs file's last line that moved the pointer onto
// epoch from another one (reason forgotten, lost, reset, …), with the
// identity of the record it left; false when there is none (no epochs
// file configured, none such line, or it cannot be read).
func (p *Pointer) Left(epoch uint64) (EpochLine, bool) {
	p.mu.Lock()
	path := p.epochs
	p.mu.Unlock()
	if path == "" {
		return EpochLine{}, false
	}
	lines, _ := ReadEpochs(path)
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Epoch == epoch && lines[i].PrevEpoch != 0 {
			return lines[i], true
		}
	}
	return EpochLine{}, false
}

// Named returns the epochs file's last line naming epoch with a file
// identity (a file key or first bytes: its "created" or "adopted" line);
// false when there is none. A record that names an epoch but no file —
// its file adopted (the line written) and the process killed before the
// first commit stored the identity — is completed from it at a restart.
func (p *Pointer) Named(epoch uint64) (EpochLine, bool) {
	p.mu.Lock()
	path := p.epochs
	p.mu.Unlock()
	if path == "" || epoch == 0 {
		return EpochLine{}, false
	}
	lines, _ := ReadEpochs(path)
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Epoch != epoch {
			continue
		}
		if lines[i].FileKey == 0 && lines[i].FPLen == 0 {
			return EpochLine{}, false // the epoch's latest line names no file (forgotten, lost)
		}
		return lines[i], true
	}
	return EpochLine{}, false
}

// adoptedBefore reports whether the epochs file's last line already names
// the file a is adopting: the same epoch, file key and path, and a
// fingerprint that the input's first bytes (head) still match (it may have
// grown since), and the length of the first bytes that line names. Called
// with p.mu held.
func (p *Pointer) adoptedBefore(a Record, head []byte) (bool, uint64) {
	l, ok := readLastLine(p.epochs)
	if ok && l.Epoch == a.Epoch && l.FileKey == a.FileKey && l.Path == p.input &&
		l.FPLen <= uint64(len(head)) && Fingerprint(head[:l.FPLen]) == l.FP {
		return true, l.FPLen
	}
	return false, 0
}

// readLastLine is lastEpochLine (a test counts the reads).
var readLastLine = lastEpochLine

// lastEpochLine returns the last complete line of the epochs file at path,
// read from its last 1 KiB, or 8 KiB when the line is longer (a long path)
// (false: none, or it does not parse). Every new glob stream asks this at
// its first read: a line is ~250 bytes, and 8 KiB read each time was the
// largest allocation of a start over 10,000 files.
func lastEpochLine(path string) (EpochLine, bool) {
	f, err := os.Open(path)
	if err != nil {
		return EpochLine{}, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return EpochLine{}, false
	}
	for _, window := range []int64{1 << 10, 8 << 10} {
		n := min(st.Size(), window)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, st.Size()-n); err != nil && !errors.Is(err, io.EOF) {
			return EpochLine{}, false
		}
		end := bytes.LastIndexByte(buf, '\n') // a torn last line is ignored
		if end < 0 {
			if n < st.Size() && window < 8<<10 {
				continue // a torn tail longer than the window
			}
			return EpochLine{}, false
		}
		start := bytes.LastIndexByte(buf[:end], '\n')
		if start < 0 && n < st.Size() {
			if window < 8<<10 {
				continue
			}
			return EpochLine{}, false // longer than the window
		}
		l, err := parseEpochLine(bytes.TrimSpace(buf[start+1 : end]))
		return l, err == nil
	}
	return EpochLine{}, false
}

// HeldBefore is the epochs file's account of what a sink whose last
// applied line is of epoch rec holds of older epochs (DESIGN §11 "epochs
// behind the record are complete"): for every epoch the pointer was moved
// off at or before the first line naming rec, the offset it was left at
// (the first such line's previousOffset). Every line of that epoch up to
// that offset was committed — acknowledged by every subscriber — before
// the pointer moved on, so before the sink applied any line of rec: an
// exactlyOnce sink with a one-epoch record skips them when a catch-up for
// another sink reads them again, instead of writing them twice. Lines of
// such an epoch past that offset (uncommitted at the move, or downgraded)
// are not covered. Nil when no line names rec (lines from ReadEpochs).
func HeldBefore(lines []EpochLine, rec uint64) map[uint64]int64 {
	first := slices.IndexFunc(lines, func(l EpochLine) bool { return l.Epoch == rec })
	if rec == 0 || first < 0 {
		return nil
	}
	out := map[uint64]int64{}
	for _, l := range lines[:first+1] {
		if l.PrevEpoch == 0 || l.PrevEpoch == l.Epoch || l.PrevEpoch == rec {
			continue
		}
		if _, ok := out[l.PrevEpoch]; !ok {
			out[l.PrevEpoch] = l.PrevOffset
		}
	}
	return out
}

// Held answers HeldBefore for a sink from the epochs file at Path, read
// again only when the sink's record moves to another epoch (the lines up
// to the first one naming an epoch never change: the file is appended
// to). The zero value with an empty Path covers nothing.
type Held struct {
	Path string

	mu   sync.Mutex
	rec  uint64
	read bool
	ends map[uint64]int64
}

// Covers reports whether the line of epoch ending at pos is one a sink
// whose last applied line is of epoch rec holds (HeldBefore).
func (h *Held) Covers(rec, epoch uint64, pos int64) bool {
	if h == nil || h.Path == "" || rec == 0 || epoch == rec {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.read || h.rec != rec {
		lines, _ := ReadEpochs(h.Path)
		h.rec, h.read, h.ends = rec, true, HeldBefore(lines, rec)
	}
	end, ok := h.ends[epoch]
	return ok && pos <= end
}
