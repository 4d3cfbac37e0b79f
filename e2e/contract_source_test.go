package e2e

// DESIGN §4 and §9: lines, positions, bytes; the read strategies.

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

const ctLinesConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
  token: ` + ctToken + `
shutdownTimeoutMillis: 1000
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
    maxLineBytes: 10
    pollIntervalMillis: 50
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
  - name: puller
    feed: app
    type: pull
    maxInFlight: 10000
`

// TestContractLines appends byte sequences one at a time to a tailed file
// and checks what a pull client and a file sink get: the lines of §9, the
// \r\n and trailing-\r rules of §4, positions as byte offsets after the
// terminator, NUL and invalid UTF-8 exact in the file and as U+FFFD in
// JSON (lineBase64 only with raw=1), maxLineBytes pieces and `oversized`,
// `unterminated` while tailing, and sequences from 1.
func TestContractLines(t *testing.T) {
	e := newEnv(t, ctLinesConfig)
	inPath := e.path("in.log")
	os.WriteFile(inPath, nil, 0o644)
	d := e.start()
	s := sample(t, d)

	var size int64     // bytes written to the input
	var wantOut []byte // what the file sink must hold
	var seq uint64
	epoch := ""
	// step appends data and expects these lines, each ending at the given
	// offset relative to the step's start.
	step := func(t *testing.T, data string, lines []string, ends []int64, query string) []event {
		t.Helper()
		base := size
		appendTo(t, inPath, data)
		size += int64(len(data))
		evs := pullFromN(t, d, "puller", len(lines), query)
		for i, ev := range evs {
			seq++
			if epoch == "" {
				epoch = ev.Epoch
			}
			if ev.Line != jsonText(lines[i]) {
				t.Errorf("line %d: %q, want %q", i, ev.Line, lines[i])
			}
			if ev.Position != base+ends[i] || ev.Sequence != seq || ev.Attempt != 1 || ev.Feed != "app" ||
				ev.Epoch != epoch || !hex16.MatchString(ev.Epoch) || ev.Path != inPath {
				t.Errorf("event %d %+v: want position %d sequence %d attempt 1 feed app epoch %s path %s", i, ev, base+ends[i], seq, epoch, inPath)
			}
			if (ev.LineBase64 != nil) != strings.Contains(query, "raw=1") {
				t.Errorf("event %d: lineBase64 %v with query %q; it is there only with raw=1", i, ev.LineBase64, query)
			}
			wantOut = append(append(wantOut, lines[i]...), '\n')
		}
		if more := pullFrom(t, d, "puller", "max=100&wait=150ms"); len(more) != 0 {
			t.Errorf("%d events more than the %d lines: %+v", len(more), len(lines), more)
		}
		ackAll(t, d, evs)
		waitUntil(t, "the file sink's output", 20*time.Second, func() bool {
			b, _ := os.ReadFile(e.path("out.log"))
			return len(b) >= len(wantOut)
		})
		if b, _ := os.ReadFile(e.path("out.log")); !bytes.Equal(b, wantOut) {
			t.Fatalf("file sink output %q, want %q", b, wantOut)
		}
		return evs
	}

	t.Run(`a\n\nb\n is three lines`, func(t *testing.T) {
		step(t, "a\n\nb\n", []string{"a", "", "b"}, []int64{2, 3, 5}, "")
	})
	t.Run(`\r\n is one terminator, \r one`, func(t *testing.T) {
		step(t, "c\r\nd\re\n", []string{"c", "d", "e"}, []int64{3, 5, 7}, "")
	})
	t.Run(`a trailing \r waits for the next byte`, func(t *testing.T) {
		step(t, "f\r", nil, nil, "")
		step(t, "\n", []string{"f"}, []int64{1}, "") // f\r\n: one line, position after \n
		step(t, "g\n\r", []string{"g"}, []int64{2}, "")
		step(t, "h\n", []string{"", "h"}, []int64{0, 2}, "") // the \r ended an empty line
	})
	t.Run("NUL and invalid UTF-8", func(t *testing.T) {
		raw := "n\x00u\xff\xfev"
		evs := step(t, raw+"\n", []string{raw}, []int64{7}, "raw=1")
		if want := "n\x00u\uFFFD\uFFFDv"; evs[0].Line != want {
			t.Errorf("JSON line %q, want %q (one U+FFFD per invalid byte)", evs[0].Line, want)
		}
		if evs[0].LineBase64 == nil {
			t.Fatal("no lineBase64 with raw=1")
		}
		if b, err := base64.StdEncoding.DecodeString(*evs[0].LineBase64); err != nil || string(b) != raw {
			t.Errorf("lineBase64 %q decodes to %q (%v), want the raw bytes %q", *evs[0].LineBase64, b, err, raw)
		}
	})
	t.Run("unterminated while tailing", func(t *testing.T) {
		step(t, "tail", nil, nil, "")
		waitReport(t, d, "unterminated 4", 30*time.Second, func(r *report) bool { return r.Feeds[0].Unterminated == 4 })
		step(t, "\n", []string{"tail"}, []int64{1}, "")
		waitReport(t, d, "unterminated 0", 30*time.Second, func(r *report) bool { return r.Feeds[0].Unterminated == 0 })
	})
	t.Run("maxLineBytes pieces", func(t *testing.T) {
		step(t, "0123456789abcdefghijKLMNO\n", []string{"0123456789", "abcdefghij", "KLMNO"}, []int64{10, 20, 26}, "")
		r := waitReport(t, d, "oversized 1", 30*time.Second, func(r *report) bool { return r.Feeds[0].Oversized >= 1 })
		if r.Feeds[0].Oversized != 1 {
			t.Errorf("oversized %d after one long line in 3 pieces, want 1 (lines, not pieces)", r.Feeds[0].Oversized)
		}
		// Exactly twice the limit: two pieces, none empty.
		step(t, "ABCDEFGHIJklmnopqrst\n", []string{"ABCDEFGHIJ", "klmnopqrst"}, []int64{10, 21}, "")
		// Exactly the limit: one line, not oversized.
		step(t, "0123456789\n", []string{"0123456789"}, []int64{11}, "")
		// Exactly the limit while tailing: it may still grow, so nothing
		// yet; the terminator makes it one line (no empty piece after it).
		step(t, "ABCDEFGHIJ", nil, nil, "")
		step(t, "\n", []string{"ABCDEFGHIJ"}, []int64{1}, "")
		step(t, "abcdefghij\r", nil, nil, "")
		step(t, "\n", []string{"abcdefghij"}, []int64{1}, "")
		r = waitReport(t, d, "settled", 30*time.Second, func(r *report) bool { return r.Settled })
		if r.Feeds[0].Oversized != 2 {
			t.Errorf("oversized %d, want 2", r.Feeds[0].Oversized)
		}
	})
	// Whichever steps ran (all, or the one -run picked): settled with the
	// sequence, acknowledged and the pointer at the end.
	if seq > 0 {
		r := waitReport(t, d, "settled at the end", 30*time.Second, func(r *report) bool {
			return r.Settled && r.Feeds[0].Pointer.Offset == size
		})
		f := r.Feeds[0]
		if f.Sequence != seq || f.Acknowledged != seq || f.PendingAcks != 0 || f.Epoch != epoch || f.Pointer.Epoch != epoch {
			t.Errorf("sequence %d acknowledged %d pendingAcks %d epoch %s/%s; want %d %d 0 %s", f.Sequence, f.Acknowledged, f.PendingAcks, f.Epoch, f.Pointer.Epoch, seq, seq, epoch)
		}
		for _, sub := range f.Subscribers {
			if sub.Position != seq || sub.Dispatched != seq || !sub.Drained || sub.State != "LIVE" {
				t.Errorf("subscriber %+v, want position = dispatched = %d, drained, LIVE", sub, seq)
			}
		}
	}
	s.finish()
	d.stop()
}

// TestContractOnceReads: a once-read treats `a\n\r` as two lines (a final
// lone \r is a terminator) and ONCE_LATEST delivers nothing.
func TestContractOnceReads(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: oe
    path: ./oe.log
    readStrategy: ONCE_EARLIEST
  - name: ol
    path: ./ol.log
    readStrategy: ONCE_LATEST
processors:
  - name: oeout
    feed: oe
    type: file
    path: ./oe.out
  - name: olout
    feed: ol
    type: file
    path: ./ol.out
`)
	os.WriteFile(e.path("oe.log"), []byte("a\n\r"), 0o644)
	os.WriteFile(e.path("ol.log"), []byte("x\ny\npartial"), 0o644)
	d := e.start()
	s := sample(t, d)
	r := waitReport(t, d, "settled", 30*time.Second, func(r *report) bool { return r.Settled })
	s.finish()
	oe, ol := r.feed(t, "oe"), r.feed(t, "ol")
	if oe.Sequence != 2 || oe.Unterminated != 0 || oe.State != "END_OF_STREAM" || !oe.Bounded {
		t.Errorf("ONCE_EARLIEST of a\\n\\r: sequence %d unterminated %d state %s bounded %v; want 2 0 END_OF_STREAM true", oe.Sequence, oe.Unterminated, oe.State, oe.Bounded)
	}
	if ol.Sequence != 0 || ol.Unterminated != 0 || ol.State != "END_OF_STREAM" || !ol.Bounded || !hex16.MatchString(ol.Epoch) || ol.Pointer != nil {
		t.Errorf("ONCE_LATEST: sequence %d unterminated %d state %s bounded %v epoch %q pointer %v; want 0 0 END_OF_STREAM true, an epoch, no pointer",
			ol.Sequence, ol.Unterminated, ol.State, ol.Bounded, ol.Epoch, ol.Pointer)
	}
	d.stop()
	if b, _ := os.ReadFile(e.path("oe.out")); string(b) != "a\n\n" {
		t.Errorf("output %q, want %q", b, "a\n\n")
	}
	if b, _ := os.ReadFile(e.path("ol.out")); len(b) != 0 {
		t.Errorf("ONCE_LATEST delivered %q", b)
	}
}

// TestContractReadStrategies runs one feed per strategy (and the COMMITED
// alias) on files with two lines and a partial one: what each reads at
// start, after an append and after a restart; `pointer` only for
// COMMITTED, an epoch for every strategy, a fresh one per open except for
// COMMITTED; `bounded` and END_OF_STREAM for ONCE_*.
func TestContractReadStrategies(t *testing.T) {
	strategies := []struct{ name, strategy, content string }{
		{"c", "COMMITTED", "p1\np2\npart"},
		{"c2", "COMMITED", "p1\np2\npart"},
		{"e", "EARLIEST", "p1\np2\npart"},
		{"l", "LATEST", "p1\np2\n"},
		{"oe", "ONCE_EARLIEST", "p1\np2\npart"},
		{"ol", "ONCE_LATEST", "p1\np2\npart"},
	}
	var cfg strings.Builder
	cfg.WriteString("dataDir: ./state\nstatus:\n  listen: {{ADDR}}\nfeeds:\n")
	for _, s := range strategies {
		fmt.Fprintf(&cfg, "  - name: %s\n    path: ./%s.log\n    readStrategy: %s\n    pollIntervalMillis: 50\n", s.name, s.name, s.strategy)
	}
	cfg.WriteString("processors:\n")
	for _, s := range strategies {
		fmt.Fprintf(&cfg, "  - name: %sout\n    feed: %s\n    type: file\n    path: ./%s.out\n", s.name, s.name, s.name)
	}
	e := newEnv(t, cfg.String())
	for _, s := range strategies {
		os.WriteFile(e.path(s.name+".log"), []byte(s.content), 0o644)
	}
	out := func(name string) string {
		b, _ := os.ReadFile(e.path(name + ".out"))
		return string(b)
	}
	type want struct {
		seq   uint64
		state string
		unt   int64
		out   string
	}
	check := func(t *testing.T, r *report, wants map[string]want) {
		t.Helper()
		for _, s := range strategies {
			f := r.feed(t, s.name)
			w := wants[s.name]
			once := strings.HasPrefix(s.strategy, "ONCE_")
			committed := strings.HasPrefix(s.strategy, "COMMIT")
			if f.Sequence != w.seq || f.State != w.state || f.Unterminated != w.unt || f.Bounded != once ||
				(f.Pointer != nil) != committed || !hex16.MatchString(f.Epoch) || !f.Settled || !f.Lossless {
				t.Errorf("%s (%s): sequence %d state %s unterminated %d bounded %v pointer %v epoch %q settled %v lossless %v;\n"+
					"  want %d %s %d %v, pointer only for COMMITTED, an epoch, settled, lossless",
					s.name, s.strategy, f.Sequence, f.State, f.Unterminated, f.Bounded, f.Pointer, f.Epoch, f.Settled, f.Lossless,
					w.seq, w.state, w.unt, once)
			}
			if committed && f.Pointer != nil && f.Pointer.Epoch != f.Epoch {
				t.Errorf("%s: pointer epoch %s, feed epoch %s", s.name, f.Pointer.Epoch, f.Epoch)
			}
			if got := out(s.name); got != w.out {
				t.Errorf("%s (%s) output %q, want %q", s.name, s.strategy, got, w.out)
			}
			_, err := os.Stat(e.path("state/feeds/" + s.name + ".ptr"))
			if committed != (err == nil) {
				t.Errorf("%s (%s): pointer file exists: %v; only COMMITTED has one", s.name, s.strategy, err == nil)
			}
		}
	}
	settledAll := func(d *daemon, seqs map[string]uint64) *report {
		return waitReport(t, d, "every feed settled", 30*time.Second, func(r *report) bool {
			for _, f := range r.Feeds {
				if f.Sequence != seqs[f.Feed] {
					return false
				}
			}
			return r.Settled
		})
	}

	d := e.start()
	s := sample(t, d)
	r1 := settledAll(d, map[string]uint64{"c": 2, "c2": 2, "e": 2, "oe": 2})
	t.Run("at start", func(t *testing.T) {
		check(t, r1, map[string]want{
			"c":  {2, "CAUGHT_UP", 4, "p1\np2\n"},
			"c2": {2, "CAUGHT_UP", 4, "p1\np2\n"},
			"e":  {2, "CAUGHT_UP", 4, "p1\np2\n"},
			"l":  {0, "CAUGHT_UP", 0, ""},
			"oe": {2, "END_OF_STREAM", 4, "p1\np2\n"},
			"ol": {0, "END_OF_STREAM", 0, ""},
		})
	})
	for _, st := range strategies {
		appendTo(t, e.path(st.name+".log"), "X\n")
	}
	r2 := settledAll(d, map[string]uint64{"c": 3, "c2": 3, "e": 3, "l": 1, "oe": 2})
	t.Run("after an append", func(t *testing.T) {
		check(t, r2, map[string]want{
			"c":  {3, "CAUGHT_UP", 0, "p1\np2\npartX\n"},
			"c2": {3, "CAUGHT_UP", 0, "p1\np2\npartX\n"},
			"e":  {3, "CAUGHT_UP", 0, "p1\np2\npartX\n"},
			"l":  {1, "CAUGHT_UP", 0, "X\n"},
			"oe": {2, "END_OF_STREAM", 4, "p1\np2\n"},
			"ol": {0, "END_OF_STREAM", 0, ""},
		})
		for _, f := range r2.Feeds {
			if f.Epoch != r1.feed(t, f.Feed).Epoch {
				t.Errorf("%s: epoch changed from %s to %s by an append", f.Feed, r1.feed(t, f.Feed).Epoch, f.Epoch)
			}
		}
	})
	s.finish()
	d.stop()

	d = e.start()
	s = sample(t, d)
	r3 := settledAll(d, map[string]uint64{"e": 3, "oe": 3})
	s.finish()
	d.stop()
	t.Run("after a restart", func(t *testing.T) {
		check(t, r3, map[string]want{
			"c":  {0, "CAUGHT_UP", 0, "p1\np2\npartX\n"},
			"c2": {0, "CAUGHT_UP", 0, "p1\np2\npartX\n"},
			"e":  {3, "CAUGHT_UP", 0, "p1\np2\npartX\np1\np2\npartX\n"},
			"l":  {0, "CAUGHT_UP", 0, "X\n"},
			"oe": {3, "END_OF_STREAM", 0, "p1\np2\np1\np2\npartX\n"},
			"ol": {0, "END_OF_STREAM", 0, ""},
		})
		for _, f := range r3.Feeds {
			same := f.Epoch == r2.feed(t, f.Feed).Epoch
			if committed := f.Feed == "c" || f.Feed == "c2"; same != committed {
				t.Errorf("%s: epoch %s before the restart, %s after; only COMMITTED keeps its epoch", f.Feed, r2.feed(t, f.Feed).Epoch, f.Epoch)
			}
		}
	})
}
