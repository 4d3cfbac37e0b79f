package file

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// refSplit is the reference splitter, one byte at a time: the lines and pieces of data when no
// byte follows it, and how many oversized lines got their last piece.
func refSplit(data []byte, maxLine int) (toks []splitTok, oversized int) {
	start, long := 0, false
	for i := 0; i < len(data); {
		if c := data[i]; c == '\n' || c == '\r' {
			end := i + 1
			if c == '\r' && end < len(data) && data[end] == '\n' {
				end++
			}
			toks = append(toks, splitTok{string(data[start:i]), int64(end)})
			if long {
				oversized++
				long = false
			}
			start, i = end, end
			continue
		}
		if i-start == maxLine { // byte i is the line's MaxLine+1-th and no terminator came before it
			toks = append(toks, splitTok{string(data[start:i]), int64(i)})
			start, long = i, true
		}
		i++
	}
	return toks, oversized
}

// splitAvailable reports whether a caller that has pushed data[:pushed] while tailing has t: a piece
// or a line ended by a lone '\r' needs the byte after it to be known.
func splitAvailable(data []byte, t splitTok, pushed int) bool {
	if t.End > int64(pushed) {
		return false
	}
	last := data[t.End-1]
	if last == '\n' {
		return true
	}
	return t.End < int64(pushed) // '\r' (might be followed by '\n') or a piece (needs one more byte)
}

// checkSplitLines checks the lines and pieces taken from data against the properties of a split,
// without any reference: ends strictly increase, lines plus the terminators between them rebuild
// data[:lastEnd], pieces are MaxLine long and followed by more of their line, no line is longer
// than MaxLine, and the unconsumed tail holds no complete line.
func checkSplitLines(t *testing.T, data []byte, maxLine int, toks []splitTok, final bool) (oversized int) {
	t.Helper()
	var rebuilt bytes.Buffer
	pos, prevPiece := 0, false
	for i, tk := range toks {
		end := int(tk.End)
		if end <= pos || end > len(data) {
			t.Fatalf("line %d %s: end not after %d or past the data (%d bytes)", i, tk, pos, len(data))
		}
		l := len(tk.Line)
		if l > maxLine {
			t.Fatalf("line %d %s longer than MaxLine %d", i, tk, maxLine)
		}
		if pos+l > end || string(data[pos:pos+l]) != tk.Line {
			t.Fatalf("line %d %s is not the input at %d", i, tk, pos)
		}
		term := string(data[pos+l : end])
		switch term {
		case "": // a piece: MaxLine bytes, more of the line follows
			if l != maxLine || end >= len(data) || data[end] == '\n' || data[end] == '\r' {
				t.Fatalf("line %d %s: bad piece (MaxLine %d)", i, tk, maxLine)
			}
		case "\r":
			if end < len(data) && data[end] == '\n' {
				t.Fatalf("line %d %s: \\r\\n split", i, tk)
			}
		case "\n", "\r\n":
		default:
			t.Fatalf("line %d %s: bytes %q between the line and its end", i, tk, term)
		}
		if prevPiece && l == 0 {
			t.Fatalf("line %d %s: empty last piece", i, tk)
		}
		if prevPiece && term != "" {
			oversized++
		}
		prevPiece = term == ""
		rebuilt.WriteString(tk.Line)
		rebuilt.WriteString(term)
		pos = end
	}
	if !bytes.Equal(rebuilt.Bytes(), data[:pos]) {
		t.Fatalf("lines and terminators do not rebuild the input up to %d", pos)
	}
	checkSplitTail(t, data[pos:], maxLine, final)
	return oversized
}

// checkSplitTail checks that the unconsumed bytes hold no complete line (nor a piece to cut).
func checkSplitTail(t *testing.T, tail []byte, maxLine int, final bool) {
	t.Helper()
	if !final && len(tail) > 0 && tail[len(tail)-1] == '\r' {
		tail = tail[:len(tail)-1] // waits for the next byte
	}
	if bytes.IndexByte(tail, '\n') >= 0 || bytes.IndexByte(tail, '\r') >= 0 || len(tail) > maxLine {
		t.Fatalf("unconsumed tail %q (final %v, MaxLine %d) holds a complete line or piece", tail, final, maxLine)
	}
}

// FuzzSplit feeds data in chunks chosen by seed, as the reader does (keep the unconsumed bytes,
// append the next chunk, split again; final on the last call), with batch limits chosen by seed,
// and checks the result against a one-shot final split, the reference splitter and the
// properties of a split.
func FuzzSplit(f *testing.F) {
	f.Add([]byte("ab\ncd\r\ne\rf\r"), uint64(1), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, maxLineSeed uint8) {
		if seed>>60 == 0xf && len(data) > 0 {
			// Repeat the input past a few scan windows, so that scans end inside lines.
			data = bytes.Repeat(data, 1+8*minScan/len(data))
		}
		checkSplit(t, data, seed, 1+int(maxLineSeed)%64)
	})
}

// checkSplit is FuzzSplit's body, for any MaxLine.
func checkSplit(t *testing.T, data []byte, seed uint64, maxLine int) {
	t.Helper()
	want, wantOversized := refSplit(data, maxLine)

	one := newSplitFeeder(maxLine)
	one.push(t, data, true)
	if !slices.Equal(one.toks, want) || one.oversized != wantOversized {
		t.Fatalf("one-shot final split: got %s oversized %d, want %s oversized %d",
			toksString(one.toks), one.oversized, toksString(want), wantOversized)
	}
	if n := checkSplitLines(t, data, maxLine, one.toks, true); n != wantOversized {
		t.Fatalf("oversized lines in the output %d, want %d", n, wantOversized)
	}

	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := newSplitFeeder(maxLine)
	c.maxLines = []int{1, 2, 3, 7, math.MaxInt}[rng.IntN(5)]
	if rng.IntN(2) == 0 {
		c.maxBytes = rng.IntN(2*maxLine + 2)
	}
	c.batch = rng.IntN(2) == 0
	lastFinal := rng.IntN(2) == 0 // final with the last chunk, or on an extra empty call
	pushed, avail := 0, 0
	for pushed < len(data) || !lastFinal {
		n := len(data) - pushed
		switch r := rng.IntN(8); {
		case r == 0:
			n = 0
		case r <= 4:
			n = min(n, 1+rng.IntN(3))
		case r <= 6:
			n = min(n, 1+rng.IntN(2*maxLine+2))
		}
		final := lastFinal && pushed+n == len(data)
		c.push(t, data[pushed:pushed+n], final)
		pushed += n
		if final {
			break
		}
		for avail < len(want) && splitAvailable(data, want[avail], pushed) {
			avail++
		}
		if !slices.Equal(c.toks, want[:avail]) {
			t.Fatalf("tailing after %d of %d bytes: got %s, want %s",
				pushed, len(data), toksString(c.toks), toksString(want[:avail]))
		}
		checkSplitTail(t, c.buf, maxLine, false)
		if pushed == len(data) && !lastFinal {
			c.push(t, nil, true)
			break
		}
	}
	if !slices.Equal(c.toks, one.toks) || c.oversized != one.oversized {
		t.Fatalf("chunked (maxLines %d, maxBytes %d, batch %v): got %s oversized %d, want %s oversized %d",
			c.maxLines, c.maxBytes, c.batch, toksString(c.toks), c.oversized, toksString(one.toks), one.oversized)
	}
	checkSplitTail(t, c.buf, maxLine, true)
	if c.base != int64(len(data)-len(c.buf)) {
		t.Fatalf("consumed %d bytes and kept %d of %d", c.base, len(c.buf), len(data))
	}
}
