package file

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestExactlyOnceJSON: with format json, the exactlyOnce record's length is
// the JSON output's: an unrecorded tail (written, then a crash before the
// record) is cut at the next open, and re-deliveries are skipped, so every
// line's object is in the output exactly once.
func TestExactlyOnceJSON(t *testing.T) {
	for _, mode := range []FsyncMode{FsyncNever, FsyncInterval, FsyncAlways} {
		t.Run(modeName(mode), func(t *testing.T) {
			e := newEOSink(t, mode)
			open := func() *Sink {
				e.cp = &eoCheckpoint{}
				s, err := Open(Config{Path: e.out, Fsync: mode, Interval: time.Hour, Checkpoint: e.cp, Record: e.rec, JSON: true})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			a, b := eoLines("a", 0, 3), eoLines("b", 0, 3)
			s := open()
			b1 := eoBatch(7, 0, a...)
			mustProcess(t, s, b1)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// A batch written but never recorded (kill -9 between the two).
			f, _ := os.OpenFile(e.out, os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(`{"id":"app:0000000000000007:99","line":"unrecorded"}` + "\n")
			f.Close()
			s = open()
			mustProcess(t, s, eoBatch(7, 0, a...))            // re-delivered: skipped
			mustProcess(t, s, eoBatch(7, b1.LastEnd(), b...)) // new
			s.Close()
			out := e.output()
			ls := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			want := append(append([]string{}, a...), b...)
			if len(ls) != len(want) {
				t.Fatalf("output has %d objects, want %d:\n%s", len(ls), len(want), out)
			}
			for i, l := range ls {
				var o struct {
					ID, Line string
					Position int64
				}
				if err := json.Unmarshal([]byte(l), &o); err != nil || o.Line != want[i] || !strings.HasPrefix(o.ID, "app:0000000000000007:") {
					t.Fatalf("object %d = %s (%v), want line %q", i, l, err, want[i])
				}
			}
		})
	}
}
