package stdout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"tailfeed/feed"
)

type writes struct {
	calls []string
	fail  error
}

func (w *writes) Write(p []byte) (int, error) {
	if w.fail != nil {
		return 0, w.fail
	}
	w.calls = append(w.calls, string(p))
	return len(p), nil
}

// TestOneWritePerBatch: each line and '\n' (or its NDJSON object), one
// Write per batch; a failed write reports nothing done.
func TestOneWritePerBatch(t *testing.T) {
	b := feed.NewBatch()
	b.Feed, b.Path, b.Epoch = "app", "/l/app.log", 0xab
	b.AppendLine([]byte("one"), 4)
	b.AppendLine([]byte("two"), 8)
	for _, tc := range []struct {
		json bool
		want string
	}{
		{false, "one\ntwo\n"},
		{true, `{"id":"app:00000000000000ab:4","feed":"app","epoch":"00000000000000ab","position":4,"path":"/l/app.log","line":"one"}` + "\n" +
			`{"id":"app:00000000000000ab:8","feed":"app","epoch":"00000000000000ab","position":8,"path":"/l/app.log","line":"two"}` + "\n"},
	} {
		w := &writes{}
		s := New(w, tc.json)
		if n, err := s.ProcessBatch(context.Background(), b); n != 2 || err != nil {
			t.Fatalf("json %v: done %d err %v", tc.json, n, err)
		}
		if len(w.calls) != 1 || w.calls[0] != tc.want {
			t.Fatalf("json %v: writes %q, want one %q", tc.json, w.calls, tc.want)
		}
		w.fail = errors.New("broken pipe")
		if n, err := s.ProcessBatch(context.Background(), b); n != 0 || err == nil {
			t.Fatalf("json %v: failed write: done %d err %v", tc.json, n, err)
		}
	}
}

// TestStopBoundsAStuckWrite: writing into a pipe whose reader never reads
// (`tailfeed run | consumer` with a stuck consumer) blocks once the pipe is
// full; the call still returns when its context ends (a stop, DESIGN §12
// "Signals"), reporting nothing done. The write given up stays on the
// sink's writer goroutine: when the reader reads at last, what it gets is
// that batch's lines (the buffer was not recycled into another batch), then
// the next call's.
func TestStopBoundsAStuckWrite(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	s := New(w, false)
	defer s.Close()
	// More than a pipe holds (64 KiB by default on Linux; up to 1 MiB).
	src := feed.NewBatch()
	src.Feed = "app"
	var want strings.Builder
	for i := 0; i < 40000; i++ {
		l := fmt.Sprintf("line %06d xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", i)
		src.AppendLine([]byte(l), int64(i+1)*int64(len(l)+1))
		want.WriteString(l + "\n")
	}
	src.Retain(1) // as a queue holds it
	var view feed.Batch
	view.Share(src) // as a group hands it over: Joined, the batch's own buffer
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	type result struct {
		n   int
		err error
	}
	got := make(chan result, 1)
	go func() {
		n, err := s.ProcessBatch(ctx, &view)
		got <- result{n, err}
	}()
	select {
	case res := <-got:
		if res.n != 0 || !errors.Is(res.err, context.DeadlineExceeded) {
			t.Fatalf("a write stuck on a full pipe, stopped: done %d err %v; want 0 and the context's error", res.n, res.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ProcessBatch did not return 10 s after its context ended: the write into a full pipe is not bounded by a stop")
	}
	// The group releases the batch; the write given up still reads it. A
	// batch taken from the pool now must not be that buffer.
	src.Release()
	for i := 0; i < 100; i++ {
		nb := feed.NewBatch()
		if nb == src {
			t.Fatal("the batch whose write was given up went back to the pool while the write may still read it")
		}
		nb.AppendLine([]byte(strings.Repeat("z", 60)), 61)
		defer nb.Release()
	}
	// The next call waits for the given-up write, then writes its own.
	next := feed.NewBatch()
	next.AppendLine([]byte("after"), 6)
	done := make(chan result, 1)
	go func() {
		n, err := s.ProcessBatch(context.Background(), next)
		done <- result{n, err}
	}()
	all, err := io.ReadAll(io.LimitReader(r, int64(want.Len()+len("after\n"))))
	if err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.n != 1 || res.err != nil {
		t.Fatalf("next write: done %d err %v", res.n, res.err)
	}
	if string(all) != want.String()+"after\n" {
		t.Fatalf("the reader got %d bytes, not the given-up batch's lines then the next one (first difference at %d)", len(all), firstDiff(string(all), want.String()+"after\n"))
	}
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestRegularFileWrittenInline: a standard output redirected to a regular
// file (whose writes wait for no reader) is written on the caller's
// goroutine, with no writer goroutine.
func TestRegularFileWrittenInline(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := New(f, false)
	b := feed.NewBatch()
	b.AppendLine([]byte("one"), 4)
	if n, err := s.ProcessBatch(context.Background(), b); n != 1 || err != nil {
		t.Fatalf("done %d err %v", n, err)
	}
	if !s.inline || s.reqs != nil {
		t.Fatalf("inline %v, writer goroutine %v", s.inline, s.reqs != nil)
	}
	if got, _ := os.ReadFile(f.Name()); string(got) != "one\n" {
		t.Fatalf("file holds %q", got)
	}
}
