package file_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// DESIGN §4: "A once-read's bytes after the last terminator are not
// delivered; `unterminated` is their count in bytes (while tailing: the
// bytes after the last terminator right now)". maxLineBytes is 10 here, so
// an unterminated tail longer than that would be cut into pieces by the
// splitter: a once-read must not deliver them.

const untermTail = "0123456789ABCDEFGHIJxyzzy" // 25 bytes, no terminator

// onceRead runs ONCE_EARLIEST (maxLineBytes 10) over data to its end with
// every line acknowledged, and returns the stopped rig.
func onceRead(t *testing.T, dir, data string, resume *file.Resume) *rig {
	t.Helper()
	r := newRig(t, dir, rigOpts{strategy: file.OnceEarliest, maxLine: 10, resume: resume})
	if data != "" {
		if err := os.WriteFile(r.path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.start()
	r.waitFor("END_OF_STREAM, every line acknowledged", 20*time.Second, func() bool {
		return r.src.State() == file.EndOfStream && r.pub.Pending() == 0
	})
	r.stop()
	return r
}

func checkLines(t *testing.T, gs []got, want []string, ends []int64) {
	t.Helper()
	if !slices.Equal(lines(gs), want) {
		t.Fatalf("delivered %q, want %q", lines(gs), want)
	}
	for i, g := range gs {
		if g.Pos != ends[i] || !g.Positioned {
			t.Fatalf("line %d %q at %d (positioned %v), want at %d", i, g.Line, g.Pos, g.Positioned, ends[i])
		}
	}
}

// A once-read delivers nothing after the last terminator before the size
// it reads to — not even full maxLineBytes pieces of an unterminated last
// line — and counts those bytes in unterminated. "\r\n" is one terminator;
// a final lone '\r' is a terminator for a once-read.
func TestOnceReadDeliversNothingAfterLastTerminator(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("0123456789", 2000) // 20,000 bytes: several backward scan chunks
	for _, tc := range []struct {
		name      string
		data      string
		want      []string
		ends      []int64
		unterm    int64
		oversized uint64
	}{
		{"tail longer than maxLineBytes", "abc\n" + untermTail, []string{"abc"}, []int64{4}, 25, 0},
		{"after crlf", "abc\r\n" + untermTail, []string{"abc"}, []int64{5}, 25, 0},
		{"after lone cr", "abc\r" + untermTail, []string{"abc"}, []int64{4}, 25, 0},
		{"no terminator at all", untermTail, nil, nil, 25, 0},
		{"final lone cr ends the long line", "abc\n0123456789ABCDEFGHIJ\r", []string{"abc", "0123456789", "ABCDEFGHIJ"}, []int64{4, 14, 25}, 0, 1},
		{"long terminated line, then a tail", "0123456789ABCDEFGHIJKL\n" + untermTail, []string{"0123456789", "ABCDEFGHIJ", "KL"}, []int64{10, 20, 23}, 25, 1},
		{"tail of many scan chunks", "x\n" + long, []string{"x"}, []int64{2}, int64(len(long)), 0},
		{"short tail", "abc\nxy", []string{"abc"}, []int64{4}, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := onceRead(t, "", tc.data, nil)
			checkLines(t, r.rec.all(), tc.want, tc.ends)
			if got := r.src.Unterminated(); got != tc.unterm {
				t.Errorf("unterminated %d, want %d", got, tc.unterm)
			}
			if got := r.src.Oversized(); got != tc.oversized {
				t.Errorf("oversized %d, want %d", got, tc.oversized)
			}
		})
	}
}

// A once-read resumed where it stopped (a glob stream taken up again, a
// reload) still reads only to the last terminator and still counts the
// bytes after it: its resume point holds the size it reads to.
func TestOnceReadResumedKeepsItsUnterminatedTail(t *testing.T) {
	t.Parallel()
	r := onceRead(t, "", "abc\n"+untermTail, nil)
	rp := r.src.ResumePoint()
	if rp == nil {
		t.Fatal("no resume point")
	}
	if rp.Offset != 4 || rp.Limit != 29 || rp.Size != 29 || rp.InLong {
		t.Fatalf("resume point offset %d limit %d size %d inLong %v, want 4, 29 (its size at open), 29 (read to it), false",
			rp.Offset, rp.Limit, rp.Size, rp.InLong)
	}
	r2 := onceRead(t, r.dir, "", rp)
	checkLines(t, r2.rec.all(), nil, nil)
	if got := r2.src.Unterminated(); got != 25 {
		t.Fatalf("resumed once-read: unterminated %d, want 25", got)
	}
}

// While tailing, a line longer than maxLineBytes is delivered in pieces as
// it is written, and unterminated is the bytes after the last terminator
// right now: the pieces already delivered count.
func TestTailingUnterminatedCountsDeliveredPieces(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Earliest, maxLine: 10})
	if err := os.WriteFile(r.path, []byte("abc\n"+untermTail), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.waitLines(3)
	r.waitFor("unterminated 25", 10*time.Second, func() bool { return r.src.Unterminated() == 25 })
	appendString(t, r.path, "\nmore")
	r.waitLines(4)
	r.waitFor("unterminated 4", 10*time.Second, func() bool { return r.src.Unterminated() == 4 })
	appendString(t, r.path, "0123456789ABCDEFGH") // "more0123456789ABCDEFGH": two pieces, 2 bytes left
	r.waitLines(6)
	r.waitFor("unterminated 22", 10*time.Second, func() bool { return r.src.Unterminated() == 22 })
	appendString(t, r.path, "\r\n")
	r.waitLines(7)
	r.waitFor("unterminated 0", 10*time.Second, func() bool { return r.src.Unterminated() == 0 })
	checkLines(t, r.rec.all(),
		[]string{"abc", "0123456789", "ABCDEFGHIJ", "xyzzy", "more012345", "6789ABCDEF", "GH"},
		[]int64{4, 14, 24, 30, 40, 50, 54})
	if got := r.src.Oversized(); got != 2 {
		t.Fatalf("oversized %d, want 2", got)
	}
}

// A source that starts inside a long unterminated line whose first pieces
// an earlier run delivered (a COMMITTED restart at the pointer; a reload's
// resume point) counts that line's bytes from its start in unterminated.
func TestStartInsideLongLineCountsItsPieces(t *testing.T) {
	t.Parallel()
	for _, st := range []file.Strategy{file.Committed, file.Earliest} {
		t.Run(st.String(), func(t *testing.T) {
			r := newRig(t, "", rigOpts{strategy: st, maxLine: 10})
			if err := os.WriteFile(r.path, []byte("abc\n"+untermTail), 0o644); err != nil {
				t.Fatal(err)
			}
			r.start()
			r.waitLines(3)
			r.waitSettled()
			r.stop()
			var rp *file.Resume
			if st != file.Committed {
				if rp = r.src.ResumePoint(); rp == nil || rp.Offset != 24 || !rp.InLong {
					t.Fatalf("resume point %+v, want offset 24 inside the long line", rp)
				}
			} else if off := r.ptr.Record().Offset; off != 24 {
				t.Fatalf("pointer at %d, want 24", off)
			}
			r2 := newRig(t, r.dir, rigOpts{strategy: st, maxLine: 10, resume: rp}).start()
			r2.waitFor("unterminated 25", 10*time.Second, func() bool {
				return r2.src.State() == file.CaughtUp && r2.src.Unterminated() == 25
			})
			appendString(t, r.path, "\n")
			r2.waitLines(1)
			r2.waitFor("unterminated 0", 10*time.Second, func() bool { return r2.src.Unterminated() == 0 })
			checkLines(t, r2.rec.all(), []string{"xyzzy"}, []int64{30})
		})
	}
}
