package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
)

// writeLines writes n lines of exactly size bytes each ('\n' included),
// each a log-like record with its number, so that no two lines are equal.
func writeLines(path string, n, size int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	line := make([]byte, size)
	for i := range line {
		line[i] = 'a' + byte(i%26)
	}
	copy(line, "2026-01-02T03:04:05.678Z INFO bench ")
	line[size-1] = '\n'
	var num [12]byte
	for i := 0; i < n; i++ {
		digits := fmt.Appendf(num[:0], "%010d ", i)
		if len(digits) <= size-1 {
			copy(line[size-1-len(digits):], digits)
		}
		if _, err := w.Write(line); err != nil {
			f.Close()
			return err
		}
	}
	return finish(f, w)
}

// finish flushes and syncs a generated input, so that its writeback does
// not run during the first measured case.
func finish(f *os.File, w *bufio.Writer) error {
	err := w.Flush()
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeSized writes about totalMiB MiB of lines whose lengths come from
// length(rng) ('\n' included, at least 1).
func writeSized(path string, totalMiB int, length func(*rand.Rand) int) (lines int, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	pattern := make([]byte, 1<<20+26)
	for i := range pattern {
		pattern[i] = 'A' + byte(i%26)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	total := int64(totalMiB) << 20
	for written := int64(0); written < total; lines++ {
		n := min(length(rng), int(total-written))
		start := lines % 26
		if _, err := w.Write(pattern[start : start+n-1]); err != nil {
			f.Close()
			return lines, err
		}
		w.WriteByte('\n')
		written += int64(n)
	}
	return lines, finish(f, w)
}

// oneMiBLines are lines of exactly 1 MiB with the terminator: the longest
// that default maxLineBytes (1 MiB) delivers whole.
func oneMiBLines(*rand.Rand) int { return 1 << 20 }

// mixedLines are log-uniform between 1 byte and 1 MiB.
func mixedLines(r *rand.Rand) int {
	return int(math.Exp(r.Float64() * math.Log(1<<20)))
}

// sameContent reports whether the two files hold the same bytes.
func sameContent(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if ea == io.EOF || ea == io.ErrUnexpectedEOF {
			return eb == ea, nil
		}
		if ea != nil {
			return false, ea
		}
		if eb != nil {
			return false, eb
		}
	}
}
