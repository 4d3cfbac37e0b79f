package file_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/source/file"
)

// A LATEST start inside the line being written delivers that line the way a
// reader from its start would (README "LATEST starts at the start of the
// line being written"): whole when it fits maxLineBytes, else its last
// pieces from the piece boundary such a reader cuts at — never a fragment
// cut at the start's offset and never an empty piece (DESIGN §4
// maxLineBytes: "none empty"). Before, the start looked back only 64 KiB
// (or maxLineBytes): a longer line in progress was taken up at the end of
// the file, its rest delivered as a line of its own ("-end"), or as an empty
// line when its terminator came next.
func TestLatestStartInsideALineBeingWritten(t *testing.T) {
	t.Parallel()
	x := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name      string
		maxLine   int
		head      string // the file at the start
		tail      string // appended once caught up
		want      []string
		oversized uint64
	}{
		{"a 100 KiB line, maxLineBytes 1 MiB", 1 << 20, "old\n" + x(100<<10), "-end\nnext\n",
			[]string{x(100<<10) + "-end", "next"}, 0},
		{"a line of 2.5 pieces, its terminator next", 1000, "old\n" + x(2500), "\nnext\n",
			[]string{x(500), "next"}, 1},
		{"a line of exactly 2 pieces, its terminator next", 1000, "old\n" + x(2000), "\nnext\n",
			[]string{x(1000), "next"}, 1},
		{"a line of 2.5 pieces, more of it next", 1000, "old\n" + x(2500), x(700) + "\nnext\n",
			[]string{x(1000), x(200), "next"}, 1},
		{"a '\\r' last: the first half of \"\\r\\n\"", 1000, "old\nabc\r", "\nnext\n",
			[]string{"abc", "next"}, 0},
		{"a line from the file's start", 1000, x(300), "\nnext\n",
			[]string{x(300), "next"}, 0},
		{"at a terminator", 1000, "old\n", "next\n", []string{"next"}, 0},
		// No terminator in the last 64 MiB: taken up at its last byte, as
		// the line's last piece (not empty).
		{"a line begun more than 64 MiB back", 1000, "old\n" + x(64<<20+10), "yz\nnext\n",
			[]string{"xyz", "next"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, "", rigOpts{strategy: file.Latest, maxLine: tc.maxLine})
			if err := os.WriteFile(r.path, []byte(tc.head), 0o644); err != nil {
				t.Fatal(err)
			}
			r.start()
			r.waitFor("caught up", 20*time.Second, func() bool { return r.src.State() == file.CaughtUp })
			appendString(t, r.path, tc.tail)
			r.waitLines(len(tc.want))
			time.Sleep(200 * time.Millisecond)
			g := r.rec.all()
			if len(g) != len(tc.want) {
				t.Fatalf("%d lines delivered, want %d: %v", len(g), len(tc.want), shortLines(g))
			}
			for i, w := range tc.want {
				if g[i].Line != w {
					t.Fatalf("line %d = %q (%d bytes), want %d bytes %q…", i, truncLine(g[i].Line), len(g[i].Line), len(w), truncLine(w))
				}
			}
			if got := r.src.Oversized(); got != tc.oversized {
				t.Errorf("oversized = %d, want %d", got, tc.oversized)
			}
		})
	}
}

func truncLine(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func shortLines(g []got) []string {
	var out []string
	for _, l := range g {
		out = append(out, truncLine(l.Line))
	}
	return out
}
