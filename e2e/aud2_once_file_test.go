package e2e

import (
	"os"
	"testing"
	"time"
)

// TestAud2XOnceReadDeliversUnterminatedPieces — DESIGN §4 "A once-read's
// bytes after the last terminator are not delivered; `unterminated` is their
// count in bytes" (README: "`ONCE_EARLIEST` reads to the file's size at open
// and stops; bytes after the last terminator are not delivered and are
// counted in `unterminated`"). An ONCE_EARLIEST file "abc\n" followed by 25
// bytes with no terminator, maxLineBytes 10. Expected: only "abc" delivered
// (sequence 1), unterminated 25. Observed: two 10-byte pieces of the
// unterminated bytes are delivered as lines ("0123456789", "ABCDEFGHIJ",
// sequence 3) and unterminated is 5 (source/file/split.go documents this as
// its choice, against the DESIGN sentence).
func TestAud2XOnceReadDeliversUnterminatedPieces(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: once
    path: ./once.log
    readStrategy: ONCE_EARLIEST
    maxLineBytes: 10
processors:
  - {name: out, feed: once, type: file, path: ./once.out}
`)
	if err := os.WriteFile(e.path("once.log"), []byte("abc\n0123456789ABCDEFGHIJxyzzy"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "once")
	d.stop()
	out, _ := os.ReadFile(e.path("once.out"))
	if string(out) != "abc\n" || f.Unterminated != 25 || f.Sequence != 1 {
		t.Errorf("ONCE_EARLIEST of %q (maxLineBytes 10): output %q, sequence %d, unterminated %d, state %s; want output %q, sequence 1, unterminated 25 (bytes after the last terminator are not delivered)",
			"abc\n0123456789ABCDEFGHIJxyzzy", out, f.Sequence, f.Unterminated, f.State, "abc\n")
	}
}
