package e2e

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// lineText is the content of input line i: unique, self-describing, and of
// varying length (20–116 bytes) so batches split at varying places.
func lineText(i int) string {
	return fmt.Sprintf("line-%08d-", i) + strings.Repeat(string(rune('a'+i%26)), i%97)
}

// input is an input file the test appends to, remembering where every line
// ends (its position, DESIGN §2).
type input struct {
	t     testing.TB
	path  string
	texts []string
	ends  []int64 // ends[i]: byte offset just after line i's terminator
}

func newInput(t testing.TB, path string) *input { return &input{t: t, path: path} }

func (in *input) size() int64 {
	if len(in.ends) == 0 {
		return 0
	}
	return in.ends[len(in.ends)-1]
}

// appendLines appends n new lines with a single write(2); it returns as soon
// as the write did, so a kill right after it lands early in the burst.
func (in *input) appendLines(n int) {
	in.t.Helper()
	var buf bytes.Buffer
	end := in.size()
	for range n {
		s := lineText(len(in.texts))
		buf.WriteString(s)
		buf.WriteByte('\n')
		end += int64(len(s)) + 1
		in.texts = append(in.texts, s)
		in.ends = append(in.ends, end)
	}
	f, err := os.OpenFile(in.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		in.t.Fatal(err)
	}
	defer f.Close()
	if w, err := f.Write(buf.Bytes()); err != nil || w != buf.Len() {
		in.t.Fatalf("append: wrote %d of %d bytes: %v", w, buf.Len(), err)
	}
}

// start is the byte offset where line i begins.
func (in *input) start(i int) int64 {
	if i == 0 {
		return 0
	}
	return in.ends[i-1]
}

// firstAfter returns the index of the first line that ends past offset: the
// line a COMMITTED restart at that pointer offset delivers first.
func (in *input) firstAfter(offset int64) int {
	return sort.Search(len(in.ends), func(i int) bool { return in.ends[i] > offset })
}

// isBoundary reports whether offset is 0 or the end of a line.
func (in *input) isBoundary(offset int64) bool {
	if offset == 0 {
		return true
	}
	i := sort.Search(len(in.ends), func(i int) bool { return in.ends[i] >= offset })
	return i < len(in.ends) && in.ends[i] == offset
}

// parsed is an output file split into input line indexes.
type parsed struct {
	idx     []int    // input line index of each complete output line, in order
	unknown []string // complete lines that are no input line (a torn or glued write)
	torn    []byte   // bytes after the last '\n'
}

// parseOutput reads a file sink's output; a missing file is empty.
func parseOutput(t testing.TB, in *input, path string) parsed {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return in.parse(data)
}

func (in *input) parse(data []byte) parsed {
	var p parsed
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			p.torn = data
			break
		}
		line := string(data[:nl])
		data = data[nl+1:]
		if i, ok := in.lookup(line); ok {
			p.idx = append(p.idx, i)
		} else {
			p.unknown = append(p.unknown, line)
		}
	}
	return p
}

// lookup returns the index of the input line whose text is exactly s.
func (in *input) lookup(s string) (int, bool) {
	if len(s) < 14 || !strings.HasPrefix(s, "line-") {
		return 0, false
	}
	i, err := strconv.Atoi(s[5:13])
	if err != nil || i < 0 || i >= len(in.texts) || in.texts[i] != s {
		return 0, false
	}
	return i, true
}

// maxIdx is the highest line index present, -1 when none.
func (p parsed) maxIdx() int {
	m := -1
	for _, i := range p.idx {
		m = max(m, i)
	}
	return m
}

// set returns the indexes present.
func (p parsed) set() map[int]bool {
	s := make(map[int]bool, len(p.idx))
	for _, i := range p.idx {
		s[i] = true
	}
	return s
}

// fileSize is the size of path, 0 when it does not exist.
func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// countLines counts '\n' in path from byte offset from on; used to wait for
// output progress without parsing.
func countLines(t testing.TB, path string, from int64) int {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() <= from {
		return 0
	}
	buf := make([]byte, st.Size()-from)
	n, _ := f.ReadAt(buf, from)
	return bytes.Count(buf[:n], []byte{'\n'})
}
