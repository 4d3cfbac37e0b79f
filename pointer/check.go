package pointer

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Verdict is what Check decided about the input file.
type Verdict int

const (
	// Kept: the same file, maybe appended to: resume at the offset.
	Kept Verdict = iota + 1
	// KeptNewKey: the same bytes under a new file key (copy-up, remount,
	// rename-into-place of the same bytes plus appended ones): resume at the
	// offset; the next Store records the new key.
	KeptNewKey
	// Replaced: other first bytes, or another file key with no fingerprint
	// to match: reset to offset 0 under a new epoch.
	Replaced
	// Truncated: the file is shorter than the offset: reset to offset 0
	// under a new epoch.
	Truncated
	// Adopted: the pointer had no identity yet (fresh, never committed): it
	// is bound to this file and keeps its epoch.
	Adopted
)

// String returns the verdict as one word.
func (v Verdict) String() string {
	switch v {
	case Kept:
		return "kept"
	case KeptNewKey:
		return "rekeyed"
	case Replaced:
		return "replaced"
	case Truncated:
		return "truncated"
	case Adopted:
		return "adopted"
	}
	return fmt.Sprintf("verdict(%d)", int(v))
}

// Bind makes f (with fileKey) the input the fingerprint is read from, and
// the key the next Store records. A nil f stops the growth: Stores keep the
// fingerprint as it is (the source unbinds a descriptor whose content was
// truncated or rewritten while lines of its epoch are still committed).
func (p *Pointer) Bind(f io.ReaderAt, fileKey uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.src, p.key = f, fileKey
}

// Check validates the pointer against the input file the source opened: f
// (read with ReadAt, never by path), its fileKey and its size from fstat.
//
//   - No identity yet (FileKey, FPLen and Offset all 0): Adopted.
//   - Same key: Truncated if size < offset, else Replaced if the first FPLen
//     bytes hash differently, else Kept.
//   - Another key: Replaced unless a non-empty fingerprint matches;
//     Truncated if it matches but size < offset; else KeptNewKey.
//
// An FPLen of 0 matches any content, so then only the key and size decide.
// Replaced and Truncated Reset the pointer to offset 0 under a new epoch;
// they and KeptNewKey are WARNs. Every verdict binds f and fileKey. An error
// reading f returns 0 and leaves the pointer alone; a failed Reset returns
// the verdict with the error (the next Sync or Commit finishes the Reset).
func (p *Pointer) Check(f *os.File, fileKey uint64, size int64) (Verdict, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrClosed
	}
	r := p.cur
	if r.FileKey == 0 && r.FPLen == 0 && r.Offset == 0 {
		p.src, p.key = f, fileKey
		if p.epochs != "" {
			adopted := r
			adopted.FileKey = fileKey
			n, err := p.readHead(f)
			if err == nil {
				adopted.FPLen, adopted.FP = uint64(n), Fingerprint(p.fp[:n])
			}
			// Logged once: a record that stays empty (nothing committed)
			// is adopted again at every start.
			if err != nil || !p.adoptedBefore(adopted, n) {
				p.logEpoch(adopted, "adopted", r)
			}
		}
		p.log.Debug("pointer adopted input", "path", p.path, "input", f.Name(), "epoch", hex(r.Epoch))
		return Adopted, nil
	}
	fpOK, err := p.fingerprintMatches(f, size)
	if err != nil {
		return 0, fmt.Errorf("pointer: check %s: %w", f.Name(), err)
	}
	v, reason := judge(&r, fpOK, fileKey, size)
	return v, p.apply(v, reason, f, fileKey, size)
}

// judge applies the rules of Check.
func judge(r *Record, fpOK bool, fileKey uint64, size int64) (Verdict, string) {
	if fileKey == r.FileKey {
		switch {
		case size < r.Offset:
			return Truncated, fmt.Sprintf("size %d < offset %d", size, r.Offset)
		case !fpOK && size < int64(r.FPLen):
			return Replaced, fmt.Sprintf("size %d < fingerprint length %d", size, r.FPLen)
		case !fpOK:
			return Replaced, fmt.Sprintf("first %d bytes differ", r.FPLen)
		}
		return Kept, ""
	}
	switch {
	case !fpOK:
		return Replaced, fmt.Sprintf("new file key and first %d bytes differ", r.FPLen)
	case r.FPLen == 0:
		return Replaced, "new file key and no fingerprint to match"
	case size < r.Offset:
		return Truncated, fmt.Sprintf("new file key and size %d < offset %d", size, r.Offset)
	}
	return KeptNewKey, "same first bytes under a new file key"
}

// apply carries out a verdict: bind, and reset where the file changed.
func (p *Pointer) apply(v Verdict, reason string, f *os.File, fileKey uint64, size int64) error {
	old := p.cur
	switch v {
	case Kept:
		p.src, p.key = f, fileKey
		return nil
	case KeptNewKey:
		p.src, p.key = f, fileKey
		p.log.Warn("pointer input has a new file key, same content: keeping offset and epoch",
			"path", p.path, "input", f.Name(), "reason", reason, "offset", old.Offset,
			"epoch", hex(old.Epoch), "old_key", hex(old.FileKey), "new_key", hex(fileKey))
		return nil
	}
	epoch := NewEpoch()
	p.log.Warn("pointer input "+v.String()+": resetting to offset 0 under a new epoch",
		"path", p.path, "input", f.Name(), "reason", reason, "offset", old.Offset, "size", size,
		"old_epoch", hex(old.Epoch), "new_epoch", hex(epoch))
	return p.reset(epoch, f, fileKey, v.String())
}

// fingerprintMatches reports whether f's first FPLen bytes hash to the
// fingerprint; a file shorter than FPLen does not match.
func (p *Pointer) fingerprintMatches(f *os.File, size int64) (bool, error) {
	n := p.cur.FPLen
	if n == 0 {
		return true, nil
	}
	if size < int64(n) {
		return false, nil
	}
	got, err := f.ReadAt(p.fp[:n], 0)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return Fingerprint(p.fp[:got]) == p.cur.FP, nil
}
