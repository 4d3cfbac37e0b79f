package file

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/go-hclog"

	"tailfeed/pointer"
)

// Verdict is what checkIdentity decided about the input file at open.
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

// checkIdentity validates the pointer p against the input file the source
// opened (DESIGN §3): f (read with ReadAt, never by path), its fileKey and
// its size from fstat.
//
//   - No identity yet (FileKey, FPLen and Offset all 0): Adopted.
//   - Same key: Truncated if size < offset, else Replaced if the first FPLen
//     bytes hash differently, else Kept.
//   - Another key: Replaced unless a non-empty fingerprint matches;
//     Truncated if it matches but size < offset; else KeptNewKey.
//
// An FPLen of 0 matches any content, so then only the key and size decide.
// Replaced and Truncated reset the pointer to offset 0 under a new epoch;
// they and KeptNewKey are WARNs on log. Every verdict binds f and fileKey.
// An error reading f returns 0 and leaves the pointer alone; a failed reset
// returns the verdict with the error (the next Sync or Commit finishes it).
// beforeReset (nil: none) runs with the verdict and the record replaced
// before a Replaced or Truncated reset: a loss it counts (fsynced ledger)
// is recorded before the pointer forgets the file, so a kill -9 between the
// two counts it again at the restart rather than never.
func checkIdentity(p *pointer.Pointer, f *os.File, fileKey uint64, size int64, log hclog.Logger, beforeReset func(Verdict, pointer.Record)) (Verdict, error) {
	return checkIdentityHead(p, f, nil, fileKey, size, log, beforeReset)
}

// checkIdentityHead is checkIdentity judging by head, f's first bytes as
// they were when size was taken (headStat), where it holds the pointer's
// fingerprint length: the verdict is then about the content the size and
// the reader's fingerprint describe, even when the file was cut since.
func checkIdentityHead(p *pointer.Pointer, f *os.File, head []byte, fileKey uint64, size int64, log hclog.Logger, beforeReset func(Verdict, pointer.Record)) (Verdict, error) {
	r := p.Record()
	if r.FileKey == 0 && r.FPLen == 0 && r.Offset == 0 {
		if err := p.Adopt(f, fileKey); err != nil {
			return 0, err
		}
		log.Debug("pointer adopted input", "path", p.Path(), "input", f.Name(), "epoch", hex16(r.Epoch))
		return Adopted, nil
	}
	var src io.ReaderAt = f
	if uint64(len(head)) >= r.FPLen {
		src = bytes.NewReader(head)
	}
	fpOK, err := sameHead(src, &r, size)
	if err != nil {
		return 0, fmt.Errorf("pointer: check %s: %w", f.Name(), err)
	}
	v, reason := judge(&r, fpOK, fileKey, size)
	switch v {
	case Kept:
		p.Bind(f, fileKey)
		return v, nil
	case KeptNewKey:
		p.Bind(f, fileKey)
		log.Warn("pointer input has a new file key, same content: keeping offset and epoch",
			"path", p.Path(), "input", f.Name(), "reason", reason, "offset", r.Offset,
			"epoch", hex16(r.Epoch), "old_key", hex16(r.FileKey), "new_key", hex16(fileKey))
		return v, nil
	}
	if beforeReset != nil {
		beforeReset(v, r)
	}
	epoch := pointer.NewEpoch()
	log.Warn("pointer input "+v.String()+": resetting to offset 0 under a new epoch",
		"path", p.Path(), "input", f.Name(), "reason", reason, "offset", r.Offset, "size", size,
		"old_epoch", hex16(r.Epoch), "new_epoch", hex16(epoch))
	return v, p.ResetAs(v.String(), epoch, f, fileKey)
}

// judge applies the rules of checkIdentity to the record r.
func judge(r *pointer.Record, fpOK bool, fileKey uint64, size int64) (Verdict, string) {
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

// sameHead reports whether f's first r.FPLen bytes hash to r's
// fingerprint; a file shorter than FPLen does not match.
func sameHead(f io.ReaderAt, r *pointer.Record, size int64) (bool, error) {
	n := r.FPLen
	if n == 0 {
		return true, nil
	}
	if size < int64(n) {
		return false, nil
	}
	buf := make([]byte, n) // at most pointer.MaxFingerprint, once per open
	got, err := f.ReadAt(buf, 0)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return pointer.Fingerprint(buf[:got]) == r.FP, nil
}

// hex16 formats an epoch, key or fingerprint as 16 lowercase hex digits.
func hex16(v uint64) string { return fmt.Sprintf("%016x", v) }
