package file_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/pointer"
	"tailfeed/source/file"
)

// A single-file pointer gets its file's identity at the first commit; the
// epochs file's adopted line is written at once and lines are published
// under the epoch before that commit. Killed in between, with the input
// rotated while stopped, the restart completes the record from the adopted
// line and reads the rotated file from the offset under the same epoch (so
// an exactlyOnce sink skips what it holds) — whether or not a new file is
// at the path yet. Before, with nothing at the path, the rotated file was
// read as a later generation under a new epoch: every exactlyOnce sink got
// its lines twice.
func TestUnnamedRecordResumesRotatedFileUnderItsEpoch(t *testing.T) {
	t.Parallel()
	for _, newAtPath := range []bool{true, false} {
		name := "nothing at the path"
		if newAtPath {
			name = "a new file at the path"
		}
		t.Run(name, func(t *testing.T) {
			dir, data := t.TempDir(), t.TempDir()
			input := filepath.Join(dir, "app.log")
			epochs := filepath.Join(data, "app.epochs")
			ptrPath := filepath.Join(data, "app.ptr")
			if err := os.WriteFile(input, []byte("one\ntwo\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			in, err := os.Open(input)
			if err != nil {
				t.Fatal(err)
			}
			var st syscall.Stat_t
			if err := syscall.Fstat(int(in.Fd()), &st); err != nil {
				t.Fatal(err)
			}
			p, err := pointer.Open(ptrPath, pointer.Options{EpochsPath: epochs, Input: input})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Adopt(in, pointer.FileKey(uint64(st.Dev), st.Ino)); err != nil {
				t.Fatal(err)
			}
			epoch := p.Record().Epoch
			if r := p.Record(); r.FileKey != 0 || r.FPLen != 0 {
				t.Fatalf("record names a file before its first commit: %+v", r)
			}
			in.Close()
			p.Close() // the kill: no commit ever stored the identity
			if err := os.Rename(input, input+".1"); err != nil {
				t.Fatal(err)
			}
			if newAtPath {
				if err := os.WriteFile(input, []byte("three\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p, err = pointer.Open(ptrPath, pointer.Options{EpochsPath: epochs, Input: input})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			q := feed.NewQueue("rec", 64, 1<<20, overload.Policy{Kind: overload.Pause})
			pub := feed.NewPublisher("app", []*feed.Queue{q}, 1024, 64)
			src := file.New(file.Config{Feed: "app", Path: input, Strategy: file.Committed,
				Pointer: p, NoNotify: true, Poll: 20 * time.Millisecond}, pub)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				src.Run(ctx)
			}()
			defer func() { cancel(); <-done }()
			pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
			defer pcancel()
			b, err := q.Pop(pctx)
			if err != nil {
				t.Fatalf("no batch after 10 s: %v", err)
			}
			if b.Epoch != epoch || len(b.Lines) == 0 || string(b.Lines[0]) != "one" {
				t.Fatalf("first batch: epoch %x, first line %q; want epoch %x (the rotated file read under the epoch its lines were published in), \"one\"",
					b.Epoch, b.Lines, epoch)
			}
		})
	}
}
