package e2e

import (
	"os"
	"testing"
	"time"
)

const onceConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    readStrategy: ONCE_EARLIEST
    pollIntervalMillis: 20
processors:
  - name: archive
    feed: app
    type: file
    path: ./out.log
`

// TestOnceEarliest: an ONCE_EARLIEST feed reads from 0 to the file's size
// at open and stops: END_OF_STREAM, bounded, settled, `unterminated` = the
// bytes after the last terminator (not delivered), no pointer. Bytes
// appended later are not read; a restart reads the whole file again.
func TestOnceEarliest(t *testing.T) {
	e := newEnv(t, onceConfig)
	in := newInput(t, e.path("in.log"))
	in.appendLines(1000)
	const partial = "no-terminator-yet"
	appendRaw(t, in.path, partial)

	d := e.start()
	r := d.waitSettled(60 * time.Second)
	f := r.Feeds[0]
	if f.State != "END_OF_STREAM" || !f.Bounded || !f.Settled || !f.Lossless || f.Unterminated != int64(len(partial)) ||
		f.Sequence != 1000 || f.Acknowledged != 1000 || f.Pointer != nil || f.Epoch == "" {
		t.Errorf("report: state %s bounded %v settled %v lossless %v unterminated %d sequence %d acknowledged %d pointer %v epoch %q;\n"+
			"want END_OF_STREAM, true, true, true, %d, 1000, 1000, null, an epoch",
			f.State, f.Bounded, f.Settled, f.Lossless, f.Unterminated, f.Sequence, f.Acknowledged, f.Pointer, f.Epoch, len(partial))
	}
	checkExactlyOnce(t, in, parseOutput(t, in, e.path("out.log")), 1000)

	// Past the size at open nothing more is read, even complete lines.
	appendRaw(t, in.path, "\nlater\n")
	time.Sleep(300 * time.Millisecond) // 15 poll intervals
	r = d.waitSettled(30 * time.Second)
	if f := r.Feeds[0]; f.Sequence != 1000 || f.State != "END_OF_STREAM" {
		t.Errorf("after an append: sequence %d state %s, want 1000 END_OF_STREAM", f.Sequence, f.State)
	}
	if got := fileSize(t, e.path("out.log")); got != in.size() {
		t.Errorf("output grew to %d bytes after an append to a once-read file, want %d", got, in.size())
	}
	if _, err := os.Stat(e.path("state/feeds/app.ptr")); !os.IsNotExist(err) {
		t.Errorf("ONCE_EARLIEST left a pointer file (err %v); only COMMITTED has one", err)
	}
	d.stop()

	// A restart reads from 0 again, now to the new size: 1002 lines.
	d = e.start()
	r = d.waitSettled(60 * time.Second)
	if f := r.Feeds[0]; f.Sequence != 1002 || f.Unterminated != 0 || f.State != "END_OF_STREAM" {
		t.Errorf("restart: sequence %d unterminated %d state %s, want 1002 0 END_OF_STREAM", f.Sequence, f.Unterminated, f.State)
	}
	d.stop()
}

// TestOnceEarliestFinalCR: a once-read treats a final lone '\r' as a
// terminator (DESIGN §4).
func TestOnceEarliestFinalCR(t *testing.T) {
	e := newEnv(t, onceConfig)
	appendRaw(t, e.path("in.log"), "a\r\nb\n\nc\r")
	d := e.start()
	r := d.waitSettled(60 * time.Second)
	if f := r.Feeds[0]; f.Sequence != 4 || f.Unterminated != 0 || f.State != "END_OF_STREAM" {
		t.Errorf("sequence %d unterminated %d state %s, want 4 0 END_OF_STREAM", f.Sequence, f.Unterminated, f.State)
	}
	d.stop()
	if b, _ := os.ReadFile(e.path("out.log")); string(b) != "a\nb\n\nc\n" {
		t.Errorf("output %q, want %q", b, "a\nb\n\nc\n")
	}
}

// appendRaw appends s to path with one write.
func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}
