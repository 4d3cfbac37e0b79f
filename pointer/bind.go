package pointer

import "io"

// Bind makes f (with fileKey) the input the fingerprint is read from, and
// the key the next Store records. A nil f stops the growth: Stores keep the
// fingerprint as it is (the source unbinds a descriptor whose content was
// truncated or rewritten while lines of its epoch are still committed).
func (p *Pointer) Bind(f io.ReaderAt, fileKey uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.src, p.key = f, fileKey
}

// Unadopted: Open created the pointer file and no Adopt has run since —
// nothing on disk names the file it was created for yet (its record and
// its epochs lines name none).
func (p *Pointer) Unadopted() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unadopted
}

// Adopt binds a record that has no identity yet (never committed: file
// key, fingerprint length and offset all 0) to its first input f with
// fileKey, keeping its epoch, and appends an "adopted" line naming f to the
// epochs file, unless the last line already names it (a record that stays
// empty is adopted again at every start). Whether the record is to be
// adopted is the caller's decision (the source's identity check).
func (p *Pointer) Adopt(f io.ReaderAt, fileKey uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.src, p.key = f, fileKey
	if p.epochs == "" {
		p.namedLen = MaxFingerprint // no epochs file: nothing a restart compares with (as before)
		return nil
	}
	r := p.cur
	adopted := r
	adopted.FileKey = fileKey
	head := getHead()
	defer headBufs.Put(head)
	n, err := p.readHead(f, head)
	if err == nil {
		adopted.FPLen, adopted.FP = uint64(n), Fingerprint(head[:n])
	}
	// A file this Pointer created has no line of its epoch but its
	// "created" one until its first adoption: no need to read the
	// epochs file's tail (a glob start did, once per new stream).
	fresh := p.unadopted
	p.unadopted = false
	p.namedLen = 0
	before, named := false, uint64(0)
	if err == nil && !fresh {
		before, named = p.adoptedBefore(adopted, head[:n])
	}
	if !before {
		// An "adopted" line keeps the epoch (its "created" line is
		// written): a failure is logged and the line is not retried.
		if p.logEpoch(adopted, "adopted", r) != nil {
			p.owedLines = nil
		} else {
			named = adopted.FPLen
		}
	}
	p.namedLen = named
	return nil
}
