package pointer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The backward commit of a catch-up (DESIGN §3, §11): both slots hold the
// rewound record afterwards, a reopen finds it, and commits go on from it.
func TestRewindSameEpoch(t *testing.T) {
	path := ptrPath(t)
	p := mustOpen(t, path, Options{})
	in, key, _ := input(t, filepath.Join(t.TempDir(), "in"), []byte("hello\nworld\n"))
	p.Bind(in, key)
	for _, off := range []int64{6, 12} {
		if err := p.Commit(off); err != nil {
			t.Fatal(err)
		}
	}
	at := p.Record()
	want := at
	want.Offset = 6
	if err := p.Rewind(want); err != nil {
		t.Fatal(err)
	}
	if !p.Synced() {
		t.Fatal("not synced after Rewind")
	}
	a, b, errA, errB := slots(readFile(t, path))
	if errA != nil || errB != nil || a.Offset != 6 || b.Offset != 6 || a.Epoch != at.Epoch || b.Epoch != at.Epoch {
		t.Fatalf("slots after Rewind: %+v %v / %+v %v", a, errA, b, errB)
	}
	if a.FileKey != key || a.FPLen != at.FPLen || a.FP != at.FP {
		t.Fatalf("the identity changed: %+v, was %+v", a, at)
	}
	if err := p.Commit(12); err != nil { // forward again from the rewound offset
		t.Fatal(err)
	}
	p.Close()
	q := mustOpen(t, path, Options{})
	if r := q.Record(); r.Offset != 12 || r.Epoch != at.Epoch {
		t.Fatalf("reopened: %+v", r)
	}
}

// Back to an older epoch: the record names that epoch's file; no slot of
// the epoch left remains, so a torn slot cannot fall back ahead of it.
func TestRewindOlderEpoch(t *testing.T) {
	path := ptrPath(t)
	p := mustOpen(t, path, Options{})
	if err := p.Commit(500); err != nil {
		t.Fatal(err)
	}
	cur := p.Record()
	old := Record{Epoch: NewEpoch(), Offset: 42, FileKey: 0x1234, FPLen: 100, FP: 0xabcd}
	if err := p.Rewind(old); err != nil {
		t.Fatal(err)
	}
	a, b, errA, errB := slots(readFile(t, path))
	for _, s := range []Record{a, b} {
		if s.Epoch != old.Epoch || s.Offset != 42 || s.FileKey != 0x1234 || s.FPLen != 100 || s.FP != 0xabcd {
			t.Fatalf("slot %c after Rewind: %+v (A %v, B %v)", s.Slot, s, errA, errB)
		}
	}
	if a.Commits <= cur.Commits {
		t.Fatalf("counter %d not past %d", a.Commits, cur.Commits)
	}
	if err := p.Rewind(Record{Epoch: 0}); !errors.Is(err, ErrZeroEpoch) {
		t.Fatalf("Rewind to epoch 0 = %v", err)
	}
	if err := p.Rewind(Record{Epoch: 1, Offset: -1}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Rewind to offset -1 = %v", err)
	}
}

// A failed first msync leaves the record ahead on disk (the next start
// decides again); a failed second one leaves the rewound record.
func TestRewindCrashBetweenSyncs(t *testing.T) {
	for _, tt := range []struct {
		name   string
		fail   []error
		wantAt int64
	}{
		{"first msync fails", []error{syscall.EIO}, 200},
		{"second msync fails", []error{nil, syscall.EIO}, 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := ptrPath(t)
			fake := &fakeMapping{}
			p := mustOpen(t, path, Options{Map: fakeMap(fake)})
			for _, off := range []int64{100, 200} {
				if err := p.Commit(off); err != nil {
					t.Fatal(err)
				}
			}
			rec := p.Record()
			rec.Offset = 100
			fake.fail = tt.fail
			if err := p.Rewind(rec); !errors.Is(err, syscall.EIO) {
				t.Fatalf("Rewind = %v, want EIO", err)
			}
			crashed := bytes.Clone(fake.disk)
			p.Close()
			os.WriteFile(path, crashed, 0o600)
			q := mustOpen(t, path, Options{})
			if got := q.Record(); got.Offset != tt.wantAt {
				t.Fatalf("after the crash: %+v, want offset %d", got, tt.wantAt)
			}
		})
	}
}
