package stdout

import (
	"context"
	"errors"
	"testing"

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
