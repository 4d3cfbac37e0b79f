package file_test

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/source/file"
)

// refuser is a publish step that refuses every other call (the PAUSE
// contract seen from the source: a refused batch is kept and offered again,
// nothing more is read meanwhile).
type refuser struct {
	file.Publisher
	calls, refused atomic.Int64
}

func (r *refuser) TryPublish(b *feed.Batch) bool {
	if r.calls.Add(1)%2 == 1 {
		r.refused.Add(1)
		return false
	}
	return r.Publisher.TryPublish(b)
}

// mixedLines returns n lines with their terminators cycling through \n,
// \r\n and \r (every 17th line empty, ended by \r\n so that it never
// merges with a preceding \r), the file bytes, and each line's end.
func mixedLines(from, n int, base int64) (lines []string, data string, ends []int64) {
	terms := []string{"\n", "\r\n", "\r"}
	var b strings.Builder
	for i := from; i < from+n; i++ {
		l := fmt.Sprintf("L%05d-\x00\xff", i)
		if i%17 == 0 {
			l = ""
		}
		term := terms[i%3]
		if l == "" {
			term = "\r\n"
		}
		b.WriteString(l)
		b.WriteString(term)
		lines = append(lines, l)
		ends = append(ends, base+int64(b.Len()))
	}
	return lines, b.String(), ends
}

func appendString(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// checkExactlyOnce asserts the deliveries are exactly want, in order, with
// the expected end positions and consecutive sequences.
func checkExactlyOnce(t *testing.T, g []got, want []string, ends []int64) {
	t.Helper()
	if len(g) != len(want) {
		t.Fatalf("got %d deliveries, want %d", len(g), len(want))
	}
	for i := range want {
		if g[i].Line != want[i] || g[i].Pos != ends[i] || !g[i].Positioned {
			t.Fatalf("delivery %d = %q at %d (positioned %v), want %q at %d", i, g[i].Line, g[i].Pos, g[i].Positioned, want[i], ends[i])
		}
		if i > 0 && g[i].Seq != g[i-1].Seq+1 {
			t.Fatalf("delivery %d has sequence %d after %d", i, g[i].Seq, g[i-1].Seq)
		}
	}
}

// Every read strategy, behind a publish step that refuses every other call:
// each line is delivered exactly once, in order, at its byte position.
func TestStrategiesWithRefusingPublish(t *testing.T) {
	t.Parallel()
	before, head, beforeEnds := mixedLines(0, 700, 0)
	after, tail, afterEnds := mixedLines(700, 300, int64(len(head)))
	for _, tc := range []struct {
		name       string
		strategy   file.Strategy
		want       []string
		ends       []int64
		appendTail bool   // append `tail` once the source is caught up
		partial    string // bytes after the last terminator at open
		state      file.State
	}{
		{"COMMITTED", file.Committed, append(append([]string{}, before...), after...), append(append([]int64{}, beforeEnds...), afterEnds...), true, "", file.CaughtUp},
		{"EARLIEST", file.Earliest, append(append([]string{}, before...), after...), append(append([]int64{}, beforeEnds...), afterEnds...), true, "", file.CaughtUp},
		{"LATEST", file.Latest, after, afterEnds, true, "", file.CaughtUp},
		{"ONCE_EARLIEST", file.OnceEarliest, before, beforeEnds, false, "part", file.EndOfStream},
		{"ONCE_LATEST", file.OnceLatest, nil, nil, false, "part", file.EndOfStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := &refuser{}
			r := newRig(t, "", rigOpts{strategy: tc.strategy, batchLines: 7, wrap: func(p file.Publisher) file.Publisher {
				ref.Publisher = p
				return ref
			}})
			if err := os.WriteFile(r.path, []byte(head+tc.partial), 0o644); err != nil {
				t.Fatal(err)
			}
			r.start()
			r.waitFor("the end of the file", 20*time.Second, func() bool { return r.src.State() == tc.state })
			if tc.appendTail {
				appendString(t, r.path, tail)
			}
			if len(tc.want) > 0 {
				r.waitLines(len(tc.want))
			}
			if tc.state == file.EndOfStream {
				appendString(t, r.path, tail) // a once-read stops at the size at open
				time.Sleep(100 * time.Millisecond)
				if got := r.src.Unterminated(); tc.strategy == file.OnceEarliest && got != int64(len(tc.partial)) {
					t.Fatalf("unterminated %d, want %d", got, len(tc.partial))
				} else if tc.strategy == file.OnceLatest && got != 0 {
					t.Fatalf("ONCE_LATEST: unterminated %d, want 0", got)
				}
			}
			if tc.state == file.EndOfStream {
				r.waitFor("every line acknowledged", 20*time.Second, func() bool { return r.pub.Pending() == 0 })
			} else {
				r.waitSettled()
			}
			checkExactlyOnce(t, r.rec.all(), tc.want, tc.ends)
			if len(tc.want) > 1 && ref.refused.Load() == 0 {
				t.Fatalf("the publish step never refused")
			}
			if r.ptr != nil {
				r.stop()
				if got := r.ptr.Record().Offset; got != int64(len(head+tail)) {
					t.Fatalf("pointer at %d after a clean stop, want %d", got, len(head+tail))
				}
			}
		})
	}
}
