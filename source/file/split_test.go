package file

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// splitTok is one line (or piece) as a caller sees it: its bytes and the file position after it.
type splitTok struct {
	Line string
	End  int64
}

func (t splitTok) String() string {
	if len(t.Line) > 24 {
		return fmt.Sprintf("%q…(%d bytes)@%d", t.Line[:16], len(t.Line), t.End)
	}
	return fmt.Sprintf("%q@%d", t.Line, t.End)
}

// splitFeeder is the caller model: it keeps the unconsumed bytes at the front of its buffer,
// appends each new chunk, and calls Split (advancing off within the buffer) until no line is
// taken.
type splitFeeder struct {
	s                  Splitter
	buf                []byte
	base               int64
	maxLines, maxBytes int
	batch              bool // keep filling out across calls until it is full (else Reset after each call)

	out       Found
	toks      []splitTok
	oversized int
}

func newSplitFeeder(maxLine int) *splitFeeder {
	return &splitFeeder{s: Splitter{MaxLine: maxLine}, maxLines: math.MaxInt, maxBytes: math.MaxInt}
}

// push appends chunk and takes every line Split gives, checking each call's contract.
func (c *splitFeeder) push(t testing.TB, chunk []byte, final bool) {
	t.Helper()
	c.buf = append(c.buf, chunk...)
	off := 0
	stopped := -1 // out.Bytes after a call that left out neither empty nor full
	for {
		before, beforeBytes := c.out.Len(), c.out.Bytes
		next := c.s.Split(c.buf, off, c.base, final, c.maxLines, c.maxBytes, &c.out)
		c.checkCall(t, off, next, before, beforeBytes)
		if stopped >= 0 && next > off && before == 0 {
			// The previous call left this line out although out had room for more lines: the
			// line must have made out.Bytes exceed maxBytes.
			if l := int(c.out.Lens[0]); stopped+l <= c.maxBytes {
				t.Fatalf("Split stopped early: out.Bytes %d + next line %d <= maxBytes %d", stopped, l, c.maxBytes)
			}
		}
		stopped = -1
		if c.out.Len() > 0 && c.out.Len() < c.maxLines {
			stopped = c.out.Bytes
		}
		if next == off {
			if c.out.Len() == 0 {
				break
			}
			c.flush()
			continue
		}
		off = next
		if !c.batch {
			c.flush()
		}
	}
	c.flush()
	c.buf = append(c.buf[:0], c.buf[off:]...)
	c.base += int64(off)
}

// checkCall checks what one Split call appended to out (before lines were there already).
func (c *splitFeeder) checkCall(t testing.TB, off, next, before, beforeBytes int) {
	t.Helper()
	f := &c.out
	if len(f.Lens) != f.Len() || len(f.Ends) != f.Len() {
		t.Fatalf("Found slices out of step: %d starts, %d lens, %d ends", f.Len(), len(f.Lens), len(f.Ends))
	}
	if f.Len() > c.maxLines && f.Len() > before {
		t.Fatalf("out holds %d lines, maxLines %d", f.Len(), c.maxLines)
	}
	if f.Len() > 1 && f.Bytes > c.maxBytes {
		t.Fatalf("out holds %d lines of %d bytes, maxBytes %d", f.Len(), f.Bytes, c.maxBytes)
	}
	sum := beforeBytes
	at := off
	for i := before; i < f.Len(); i++ {
		if int(f.Starts[i]) != at {
			t.Fatalf("line %d starts at %d, want %d (just after the previous line)", i, f.Starts[i], at)
		}
		sum += int(f.Lens[i])
		at = int(f.Ends[i] - c.base)
	}
	if f.Bytes != sum {
		t.Fatalf("out.Bytes = %d, sum of Lens %d", f.Bytes, sum)
	}
	if next != at {
		t.Fatalf("Split returned %d, want %d (after the last line taken)", next, at)
	}
}

// flush records the lines in out and resets it.
func (c *splitFeeder) flush() {
	for i := range c.out.Len() {
		s := int(c.out.Starts[i])
		c.toks = append(c.toks, splitTok{string(c.buf[s : s+int(c.out.Lens[i])]), c.out.Ends[i]})
	}
	c.oversized += c.out.Oversized
	c.out.Reset()
}

// toksString shows ts, abbreviated: long lines cut short, at most 40 lines.
func toksString(ts []splitTok) string {
	var b strings.Builder
	for i, t := range ts {
		if i == 40 {
			fmt.Fprintf(&b, " … %d more", len(ts)-i)
			break
		}
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(t.String())
	}
	return "[" + b.String() + "]"
}

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		maxLine   int
		in        string
		tail      []splitTok // taken while tailing (final=false)
		final     []splitTok // taken in addition by the final call
		oversized int        // after the final call
	}{
		{name: "Empty", in: ""},
		{name: "LF", in: "ab\ncd\n", tail: []splitTok{{"ab", 3}, {"cd", 6}}},
		{name: "CRLF", in: "ab\r\ncd\r\n", tail: []splitTok{{"ab", 4}, {"cd", 8}}},
		{name: "LoneCR", in: "ab\rcd\rx", tail: []splitTok{{"ab", 3}, {"cd", 6}}},
		{name: "TrailingCRWaitsThenTerminatesWhenFinal", in: "ab\rcd\r", tail: []splitTok{{"ab", 3}}, final: []splitTok{{"cd", 6}}},
		{name: "TrailingCRLF", in: "ab\r\n", tail: []splitTok{{"ab", 4}}},
		{name: "CRCRLF", in: "a\r\r\nb\n", tail: []splitTok{{"a", 2}, {"", 4}, {"b", 6}}},
		{name: "EmptyLines", in: "a\n\nb\n", tail: []splitTok{{"a", 2}, {"", 3}, {"b", 5}}},
		{name: "OnlyTerminators", in: "\n\r\n\r\r", tail: []splitTok{{"", 1}, {"", 3}, {"", 4}}, final: []splitTok{{"", 5}}},
		{name: "LFCR", in: "a\n\r", tail: []splitTok{{"a", 2}}, final: []splitTok{{"", 3}}},
		{name: "LFCRLF", in: "a\n\r\n", tail: []splitTok{{"a", 2}, {"", 4}}},
		{name: "NUL", in: "a\x00b\n\x00\n\x00", tail: []splitTok{{"a\x00b", 4}, {"\x00", 6}}},
		{name: "InvalidUTF8", in: "\xff\xfe\xc3\n\xed\xa0\x80\r\n", tail: []splitTok{{"\xff\xfe\xc3", 4}, {"\xed\xa0\x80", 9}}},
		{name: "NoTrailingTerminator", in: "abc"},
		{name: "NoTrailingTerminatorAfterLine", in: "ab\ncd", tail: []splitTok{{"ab", 3}}},
		{name: "ExactMaxLine", maxLine: 4, in: "abcd\nabcd", tail: []splitTok{{"abcd", 5}}},
		{name: "ExactMaxLineCR", maxLine: 4, in: "abcd\r", final: []splitTok{{"abcd", 5}}},
		{name: "MaxLinePlus1", maxLine: 4, in: "abcde\n", tail: []splitTok{{"abcd", 4}, {"e", 6}}, oversized: 1},
		{name: "TwiceMaxLine", maxLine: 4, in: "abcdefgh\n", tail: []splitTok{{"abcd", 4}, {"efgh", 9}}, oversized: 1},
		{name: "TwiceMaxLinePlus1", maxLine: 4, in: "abcdefghi\n", tail: []splitTok{{"abcd", 4}, {"efgh", 8}, {"i", 10}}, oversized: 1},
		{name: "PiecesThenCRLF", maxLine: 4, in: "abcdefgh\r\nx\n", tail: []splitTok{{"abcd", 4}, {"efgh", 10}, {"x", 12}}, oversized: 1},
		{name: "PieceThenTrailingCR", maxLine: 4, in: "abcde\r", tail: []splitTok{{"abcd", 4}}, final: []splitTok{{"e", 6}}, oversized: 1},
		{name: "PiecesUnterminated", maxLine: 4, in: "abcdefghij", tail: []splitTok{{"abcd", 4}, {"efgh", 8}}},
		{name: "PiecesUnterminatedTwiceMaxLine", maxLine: 4, in: "abcdefgh", tail: []splitTok{{"abcd", 4}}},
		{name: "MaxLine1", maxLine: 1, in: "ab\n\nc\r\n", tail: []splitTok{{"a", 1}, {"b", 3}, {"", 4}, {"c", 7}}, oversized: 1},
		{name: "OversizedCountedPerLine", maxLine: 2, in: "abc\ndefgh\r\nij\n", tail: []splitTok{
			{"ab", 2}, {"c", 4}, {"de", 6}, {"fg", 8}, {"h", 11}, {"ij", 14}}, oversized: 2},
		{name: "OversizedNUL", maxLine: 2, in: "\x00\x00\x00\r\x00", tail: []splitTok{{"\x00\x00", 2}, {"\x00", 4}}, oversized: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxLine := tt.maxLine
			if maxLine == 0 {
				maxLine = 64
			}
			in := []byte(tt.in)
			// Tailing, the buffer growing one byte at a time, then the end of the stream.
			c := newSplitFeeder(maxLine)
			for i := range in {
				c.push(t, in[i:i+1], false)
			}
			if !slices.Equal(c.toks, tt.tail) {
				t.Fatalf("tailing byte by byte: got %s, want %s", toksString(c.toks), toksString(tt.tail))
			}
			c.push(t, nil, true)
			want := append(slices.Clone(tt.tail), tt.final...)
			if !slices.Equal(c.toks, want) {
				t.Fatalf("final: got %s, want %s", toksString(c.toks), toksString(want))
			}
			if c.oversized != tt.oversized {
				t.Fatalf("oversized = %d, want %d", c.oversized, tt.oversized)
			}
			if int64(len(in)) != c.base+int64(len(c.buf)) {
				t.Fatalf("consumed %d + kept %d != %d bytes", c.base, len(c.buf), len(in))
			}
			// The same input at once, tailing then final, and one line per call.
			for _, maxLines := range []int{math.MaxInt, 1} {
				c := newSplitFeeder(maxLine)
				c.maxLines = maxLines
				c.push(t, in, false)
				if !slices.Equal(c.toks, tt.tail) {
					t.Fatalf("tailing at once (maxLines %d): got %s, want %s", maxLines, toksString(c.toks), toksString(tt.tail))
				}
				c.push(t, nil, true)
				if !slices.Equal(c.toks, want) || c.oversized != tt.oversized {
					t.Fatalf("final at once (maxLines %d): got %s oversized %d, want %s oversized %d",
						maxLines, toksString(c.toks), c.oversized, toksString(want), tt.oversized)
				}
			}
		})
	}
}

func TestSplitChunks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		maxLine   int
		chunks    []string
		want      []splitTok // after each chunk (tailing), then final
		oversized int
	}{
		{name: "CRLFAcrossCalls", maxLine: 8, chunks: []string{"ab\r", "\ncd\r", "\nx\r", "y\n"},
			want: []splitTok{{"ab", 4}, {"cd", 8}, {"x", 10}, {"y", 12}}},
		{name: "PiecesThenCRLFAcrossCalls", maxLine: 4, chunks: []string{"abcdefgh\r", "\n"},
			want: []splitTok{{"abcd", 4}, {"efgh", 10}}, oversized: 1},
		{name: "PieceThenCRAcrossCalls", maxLine: 4, chunks: []string{"abcde\r", "\n", "z\n"},
			want: []splitTok{{"abcd", 4}, {"e", 7}, {"z", 9}}, oversized: 1},
		{name: "PieceWhileTailingThenRest", maxLine: 4, chunks: []string{"abcde", "fghij", "k\n"},
			want: []splitTok{{"abcd", 4}, {"efgh", 8}, {"ijk", 12}}, oversized: 1},
		{name: "ExactMaxLineThenTerminator", maxLine: 4, chunks: []string{"abcd", "\r", "\n"},
			want: []splitTok{{"abcd", 6}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newSplitFeeder(tt.maxLine)
			for _, ch := range tt.chunks {
				c.push(t, []byte(ch), false)
			}
			c.push(t, nil, true)
			if !slices.Equal(c.toks, tt.want) || c.oversized != tt.oversized {
				t.Fatalf("got %s oversized %d, want %s oversized %d",
					toksString(c.toks), c.oversized, toksString(tt.want), tt.oversized)
			}
		})
	}
}

// splitOnce is one Split call; it returns next and the lines it appended to out.
func splitOnce(s *Splitter, buf string, off int, base int64, final bool, maxLines, maxBytes int, out *Found) (int, []splitTok) {
	before := out.Len()
	next := s.Split([]byte(buf), off, base, final, maxLines, maxBytes, out)
	var ts []splitTok
	for i := before; i < out.Len(); i++ {
		st := int(out.Starts[i])
		ts = append(ts, splitTok{buf[st : st+int(out.Lens[i])], out.Ends[i]})
	}
	return next, ts
}

func TestSplitLimits(t *testing.T) {
	t.Parallel()
	type call struct {
		off                int
		reset              bool // out.Reset() before the call
		maxLines, maxBytes int
		next               int
		want               []splitTok
		bytes, oversized   int // out after the call
	}
	const all = math.MaxInt
	tests := []struct {
		name    string
		maxLine int
		in      string
		calls   []call
	}{
		{name: "MaxLines", in: "a\nb\nc\n", calls: []call{
			{off: 0, maxLines: 2, maxBytes: all, next: 4, want: []splitTok{{"a", 2}, {"b", 4}}, bytes: 2},
			{off: 4, maxLines: 2, maxBytes: all, next: 4, bytes: 2}, // out already full
			{off: 4, reset: true, maxLines: 2, maxBytes: all, next: 6, want: []splitTok{{"c", 6}}, bytes: 1},
		}},
		{name: "MaxLinesZeroTakesNothing", in: "a\n", calls: []call{
			{off: 0, maxLines: 0, maxBytes: all, next: 0},
		}},
		{name: "MaxBytes", in: "aa\nbb\ncc\n", calls: []call{
			{off: 0, maxLines: all, maxBytes: 4, next: 6, want: []splitTok{{"aa", 3}, {"bb", 6}}, bytes: 4},
			{off: 6, maxLines: all, maxBytes: 5, next: 6, bytes: 4}, // 4 + 2 > 5
			{off: 6, maxLines: all, maxBytes: 6, next: 9, want: []splitTok{{"cc", 9}}, bytes: 6},
		}},
		{name: "LongLineTakenWhenOutEmpty", in: "aaaaaa\nb\n", calls: []call{
			{off: 0, maxLines: all, maxBytes: 3, next: 7, want: []splitTok{{"aaaaaa", 7}}, bytes: 6},
			{off: 7, maxLines: all, maxBytes: 3, next: 7, bytes: 6},
			{off: 7, reset: true, maxLines: all, maxBytes: 3, next: 9, want: []splitTok{{"b", 9}}, bytes: 1},
		}},
		{name: "LongLineWaitsWhenOutNotEmpty", in: "b\naaaaaa\n", calls: []call{
			{off: 0, maxLines: all, maxBytes: 3, next: 2, want: []splitTok{{"b", 2}}, bytes: 1},
			{off: 2, reset: true, maxLines: all, maxBytes: 3, next: 9, want: []splitTok{{"aaaaaa", 9}}, bytes: 6},
		}},
		{name: "EmptyLinesFitZeroBytes", in: "\n\nab\n\n", calls: []call{
			{off: 0, maxLines: all, maxBytes: 0, next: 2, want: []splitTok{{"", 1}, {"", 2}}},
		}},
		{name: "PiecesCountAsLines", maxLine: 2, in: "abcdef\n", calls: []call{
			{off: 0, maxLines: 2, maxBytes: all, next: 4, want: []splitTok{{"ab", 2}, {"cd", 4}}, bytes: 4},
			{off: 4, reset: true, maxLines: 2, maxBytes: all, next: 7, want: []splitTok{{"ef", 7}}, bytes: 2, oversized: 1},
		}},
		{name: "PiecesCountAsBytes", maxLine: 2, in: "abcde\n", calls: []call{
			{off: 0, maxLines: all, maxBytes: 2, next: 2, want: []splitTok{{"ab", 2}}, bytes: 2},
			{off: 2, reset: true, maxLines: all, maxBytes: 2, next: 4, want: []splitTok{{"cd", 4}}, bytes: 2},
			{off: 4, reset: true, maxLines: all, maxBytes: 2, next: 6, want: []splitTok{{"e", 6}}, bytes: 1, oversized: 1},
		}},
		{name: "OversizedOncePerLine", maxLine: 2, in: "abcde\nxyz\n", calls: []call{
			{off: 0, maxLines: all, maxBytes: all, next: 10,
				want: []splitTok{{"ab", 2}, {"cd", 4}, {"e", 6}, {"xy", 8}, {"z", 10}}, bytes: 8, oversized: 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxLine := tt.maxLine
			if maxLine == 0 {
				maxLine = 64
			}
			s := Splitter{MaxLine: maxLine}
			var out Found
			for i, c := range tt.calls {
				if c.reset {
					out.Reset()
				}
				next, got := splitOnce(&s, tt.in, c.off, 0, false, c.maxLines, c.maxBytes, &out)
				if next != c.next || !slices.Equal(got, c.want) || out.Bytes != c.bytes || out.Oversized != c.oversized {
					t.Fatalf("call %d: got next %d %s bytes %d oversized %d, want next %d %s bytes %d oversized %d",
						i, next, toksString(got), out.Bytes, out.Oversized, c.next, toksString(c.want), c.bytes, c.oversized)
				}
			}
		})
	}
}

func TestSplitOffsetAndBase(t *testing.T) {
	t.Parallel()
	s := Splitter{MaxLine: 64}
	var out Found
	next := s.Split([]byte("XXab\ncd\r\n"), 2, 1000, false, math.MaxInt, math.MaxInt, &out)
	if next != 9 || !slices.Equal(out.Starts, []int32{2, 5}) || !slices.Equal(out.Lens, []int32{2, 2}) ||
		!slices.Equal(out.Ends, []int64{1005, 1009}) || out.Bytes != 4 || out.Len() != 2 {
		t.Fatalf("got next %d %+v", next, out)
	}
	out.Reset()
	if out.Len() != 0 || out.Bytes != 0 || out.Oversized != 0 || cap(out.Starts) == 0 {
		t.Fatalf("after Reset: %+v (cap %d)", out, cap(out.Starts))
	}
}

func TestSplitNoAllocation(t *testing.T) {
	buf := bytes.Repeat([]byte(strings.Repeat("x", 99)+"\n"), 1000)
	buf = append(buf, bytes.Repeat([]byte(strings.Repeat("y", 98)+"\r\n"), 1000)...)
	s := Splitter{MaxLine: 64}
	var out Found
	s.Split(buf, 0, 0, false, math.MaxInt, math.MaxInt, &out) // grow out once
	allocs := testing.AllocsPerRun(20, func() {
		out.Reset()
		if n := s.Split(buf, 0, 0, false, math.MaxInt, math.MaxInt, &out); n != len(buf) {
			t.Fatalf("Split took %d of %d bytes", n, len(buf))
		}
	})
	if allocs != 0 {
		t.Fatalf("Split allocates %v times per call in steady state", allocs)
	}
	if out.Len() != 4000 || out.Oversized != 2000 {
		t.Fatalf("got %d lines, %d oversized; want 4000, 2000", out.Len(), out.Oversized)
	}
}

func TestSplitBadMaxLinePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("Split with MaxLine 0 did not panic")
		}
	}()
	var s Splitter
	s.Split([]byte("a\n"), 0, 0, false, 1, 1, &Found{})
}

// TestSplitLongLines runs the fuzz checks on lines around and beyond the scan windows, with
// terminators (and "\r\n" halves) on either side of window ends, with and without pieces.
func TestSplitLongLines(t *testing.T) {
	t.Parallel()
	const w, m = minScan, maxScan
	lens := []int{0, 1, w - 1, w, w + 1, 3*w - 1, 3 * w, 3*w + 1, m - 1, m, m + 1, 2*m + 1, 3*m + 5}
	terms := []string{"\n", "\r\n", "\r", "\r\r\n", "\n\r"}
	var data []byte
	for i, l := range lens {
		for j, term := range terms {
			data = append(data, bytes.Repeat([]byte{byte('a' + (i+j)%26)}, l)...)
			data = append(data, term...)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sparse, dense := splitRandomLines(rng, 1<<17, 6000), splitRandomLines(rng, 1<<14, 150)
	for _, maxLine := range []int{100, w, 5000, m - 1, m, m + 1, 2*m + 1, 1 << 20} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("MaxLine%d/Seed%d", maxLine, seed), func(t *testing.T) {
				checkSplit(t, data, seed, maxLine)
				checkSplit(t, data[:len(data)-1], seed, maxLine) // ends in a lone '\n' or '\r'
				checkSplit(t, sparse, seed, maxLine)
				checkSplit(t, dense, seed, maxLine)
			})
		}
	}
}

// splitRandomLines returns n bytes of letters, each byte a '\n' with probability 1/per, a '\r'
// likewise.
func splitRandomLines(rng *rand.Rand, n, per int) []byte {
	b := make([]byte, n)
	for i := range b {
		switch r := rng.IntN(per); {
		case r == 0:
			b[i] = '\n'
		case r == 1:
			b[i] = '\r'
		default:
			b[i] = byte('a' + rng.IntN(26))
		}
	}
	return b
}

// splitLinesOf returns n lines of 100 bytes each, terminator included.
func splitLinesOf(n int, term string) []byte {
	line := []byte(strings.Repeat("x", 100-len(term)) + term)
	for i := range line[:100-len(term)] {
		line[i] = 'a' + byte(i%26)
	}
	return bytes.Repeat(line, n)
}

// BenchmarkSplit splits 1 MiB of 100-byte lines in batches of 1024 lines, as the reader does
// (OneLinePerCall: a batch of one line per call, as when a queue has room for one more).
func BenchmarkSplit(b *testing.B) {
	for _, bc := range []struct {
		name, term string
		maxLines   int
	}{{"LF", "\n", 1024}, {"CRLF", "\r\n", 1024}, {"CR", "\r", 1024}, {"LF/OneLinePerCall", "\n", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			buf := splitLinesOf(1<<20/100, bc.term)
			s := Splitter{MaxLine: 1 << 20}
			var out Found
			s.Split(buf, 0, 0, false, 1024, 4<<20, &out) // grow out before timing
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				for off := 0; ; {
					out.Reset()
					next := s.Split(buf, off, 0, false, bc.maxLines, 4<<20, &out)
					if next == off {
						break
					}
					off = next
				}
			}
		})
	}
}

// BenchmarkSplit1MLines splits a 1,000,000-line file of 100-byte lines held in memory:
// "Whole" in one buffer, "Chunked" as the reader does (1 MiB reads appended after the kept
// tail, batches of 1024 lines), so it includes copying the bytes into the read buffer.
func BenchmarkSplit1MLines(b *testing.B) {
	const lines = 1_000_000
	data := splitLinesOf(lines, "\n")
	run := func(b *testing.B, pass func() int) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		iters := 0
		for b.Loop() {
			if n := pass(); n != lines {
				b.Fatalf("split %d lines, want %d", n, lines)
			}
			iters++
		}
		b.ReportMetric(float64(lines)*float64(iters)/b.Elapsed().Seconds(), "lines/s")
	}
	var out Found
	(&Splitter{MaxLine: 1 << 20}).Split(data, 0, 0, false, 1024, 4<<20, &out) // grow out before timing
	b.Run("Whole", func(b *testing.B) {
		s := Splitter{MaxLine: 1 << 20}
		run(b, func() (n int) {
			for off := 0; ; {
				out.Reset()
				next := s.Split(data, off, 0, true, 1024, 4<<20, &out)
				if next == off {
					return n
				}
				n += out.Len()
				off = next
			}
		})
	})
	b.Run("Chunked", func(b *testing.B) {
		const chunk = 1 << 20
		buf := make([]byte, 0, 2*chunk)
		run(b, func() (n int) {
			s := Splitter{MaxLine: 1 << 20}
			buf, base := buf[:0], int64(0)
			for pos := 0; pos < len(data); {
				m := min(chunk, len(data)-pos)
				buf = append(buf, data[pos:pos+m]...)
				pos += m
				off := 0
				for {
					out.Reset()
					next := s.Split(buf, off, base, pos == len(data), 1024, 4<<20, &out)
					if next == off {
						break
					}
					n += out.Len()
					off = next
				}
				buf = buf[:copy(buf, buf[off:])]
				base += int64(off)
			}
			return n
		})
	})
}

// takeFound hands out an empty Found with room for the batch (no growth
// while splitting one), reusing what giveFound put back; giveFound leaves
// its owner empty (a stopped glob stream's storage goes to the next one).
func TestTakeFoundGiveFound(t *testing.T) {
	t.Parallel()
	f := takeFound(512)
	if f.Len() != 0 || cap(f.Starts) < 512 || cap(f.Lens) < 512 || cap(f.Ends) < 512 {
		t.Fatalf("takeFound(512): len %d, caps %d %d %d", f.Len(), cap(f.Starts), cap(f.Lens), cap(f.Ends))
	}
	f.add(0, 3, 4)
	f.Bytes, f.Oversized = 3, 1
	giveFound(&f)
	if f.Starts != nil || f.Lens != nil || f.Ends != nil || f.Bytes != 0 || f.Oversized != 0 {
		t.Fatalf("giveFound left its owner %+v", f)
	}
	giveFound(&f) // nothing to give: no-op
	for range 3 {
		g := takeFound(512)
		if g.Len() != 0 || g.Bytes != 0 || g.Oversized != 0 || cap(g.Starts) < 512 {
			t.Fatalf("takeFound after giveFound: %+v", g)
		}
		h := takeFound(4096) // more than a pooled one holds: a new one
		if cap(h.Starts) < 4096 || cap(h.Lens) < 4096 || cap(h.Ends) < 4096 {
			t.Fatalf("takeFound(4096): caps %d %d %d", cap(h.Starts), cap(h.Lens), cap(h.Ends))
		}
		giveFound(&g)
	}
}
