package file

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// refLastTermEnd is lastTermEnd by a forward scan of data[lo:hi].
func refLastTermEnd(data []byte, lo, hi int) int {
	at := lo
	for i := lo; i < hi; i++ {
		if data[i] == '\n' || data[i] == '\r' {
			at = i + 1
		}
	}
	return at
}

// lastTermEnd finds the end of the last terminator in a range however far
// back it lies (across its growing backward chunks), '\r' and '\n' alike.
func TestLastTermEnd(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	path := filepath.Join(t.TempDir(), "f")
	for _, size := range []int{0, 1, 2, 4095, 4096, 4097, 12287, 12288, 40000, 600000} {
		data := make([]byte, size)
		for i := range data {
			data[i] = 'a' + byte(i%26)
		}
		// A few terminators, the last of them at varied depths.
		for _, d := range []int{size / 2, size / 3, size - 5000, size - 4096, size - 1} {
			if d >= 0 && d < size {
				data[d] = "\n\r"[rng.IntN(2)]
			}
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for range 40 {
			lo := rng.IntN(size + 1)
			hi := lo + rng.IntN(size-lo+1)
			got, err := lastTermEnd(f, int64(lo), int64(hi))
			if want := refLastTermEnd(data, lo, hi); err != nil || got != int64(want) {
				t.Fatalf("size %d: lastTermEnd(%d, %d) = %d, %v; want %d", size, lo, hi, got, err, want)
			}
		}
		f.Close()
	}
}

// The Splitter knows where the line at its offset began whenever pieces of
// it were taken (mid, lineFrom), and only then, whatever the chunking.
func TestSplitterKnowsLongLineStart(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 5))
	for iter := range 300 {
		maxLine := 1 + rng.IntN(12)
		n := rng.IntN(400)
		data := make([]byte, n)
		for i := range data {
			switch r := rng.IntN(40); {
			case r == 0:
				data[i] = '\n'
			case r == 1:
				data[i] = '\r'
			default:
				data[i] = 'a' + byte(r%26)
			}
		}
		c := newSplitFeeder(maxLine)
		for at := 0; at < n; {
			k := min(n-at, 1+rng.IntN(50))
			c.push(t, data[at:at+k], false)
			at += k
			consumed := int(c.base)
			start := refLastTermEnd(data, 0, consumed)
			if c.s.mid != (start < consumed) || (c.s.mid && c.s.lineFrom != int64(start)) {
				t.Fatalf("iter %d (maxLine %d): at %d consumed %d: mid %v lineFrom %d; the line there began at %d",
					iter, maxLine, at, consumed, c.s.mid, c.s.lineFrom, start)
			}
			if c.s.inLong && !c.s.mid {
				t.Fatalf("iter %d: inLong without mid", iter)
			}
		}
	}
}
