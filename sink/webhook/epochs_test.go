package webhook

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"tailfeed/internal/slotrec"
	"tailfeed/pointer"
)

// noSync is a record file whose fsync does nothing (thousands of stores).
type noSync struct{ *os.File }

func (noSync) Sync() error { return nil }

func openBookAt(t *testing.T, path string, committed func([]uint64) (map[uint64]int64, error), fast bool) *whBook {
	t.Helper()
	cfg := WebhookConfig{Record: path, PerEpoch: true, Committed: committed}
	if fast {
		cfg.OpenRecord = func(p string) (slotrec.RecordFile, error) {
			f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
			return noSync{f}, err
		}
	}
	k, err := openBook(cfg, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.close() })
	return k
}

func table(k *whBook) string {
	out := map[uint64]whEntry{}
	for ep, e := range k.ent {
		x := *e
		x.used = 0
		out[ep] = x
	}
	return fmt.Sprint(out)
}

// Layout 2 keeps every epoch's applied position and recorded request, in
// two copies: a torn newest copy leaves the one before.
func TestWebhookRecordPerEpoch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hook.rec")
	k := openBookAt(t, path, nil, false)
	steps := []func() error{
		func() error { return k.recordRange(0xa1, 8, 16) },
		func() error { return k.markApplied(0xa1, 16) },
		func() error { return k.recordRange(0xb2, 8, 24) },
		func() error { return k.recordRange(0xa1, 24, 32) }, // B's request stays recorded
	}
	for _, f := range steps {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	want := table(k)
	if want != "map[161:{16 24 32 0} 178:{0 8 24 0}]" {
		t.Fatalf("table %s", want)
	}
	k.close()
	k2 := openBookAt(t, path, nil, false)
	if got := table(k2); got != want {
		t.Fatalf("reopened: %s, want %s", got, want)
	}
	if got := fmt.Sprint(k2.pendingAny()); got != "[161 178]" {
		t.Fatalf("pending %s", got)
	}
	k2.close()
	// The fourth store went to copy B; tear it: copy A (three stores) is used.
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	f.WriteAt([]byte("garbage"), wh2Copy+40)
	f.Close()
	k3 := openBookAt(t, path, nil, false)
	if got := table(k3); got != "map[161:{16 8 16 0} 178:{0 8 24 0}]" {
		t.Fatalf("after a torn copy B: %s", got)
	}
}

// A layout 1 record (the feed became a glob) is taken over; the first
// store goes to copy B, leaving the layout 1 slots whole until it is done.
func TestWebhookRecordTakesLayout1Over(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hook.rec")
	v1, _, err := loadWH(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range goldenWH {
		if err := v1.store(s); err != nil {
			t.Fatal(err)
		}
	}
	v1.f.Close()
	k := openBookAt(t, path, nil, false)
	if got := table(k); got != "map[225:{44 55 88 0}]" {
		t.Fatalf("taken over: %s", got)
	}
	if err := k.markApplied(0xe2, 10); err != nil {
		t.Fatal(err)
	}
	k.close()
	v1again, ok, err := loadWH(path, nil)
	if err != nil || !ok || v1again.disk.BatchLast != 88 {
		t.Fatalf("layout 1 slots after the first layout 2 store: ok %v %+v %v", ok, v1again.disk, err)
	}
	v1again.f.Close()
	k2 := openBookAt(t, path, nil, false)
	if got := table(k2); got != "map[225:{44 55 88 0} 226:{10 0 0 0}]" {
		t.Fatalf("reopened: %s", got)
	}
}

// The bound: a sweep drops every entry whose stream pointer is committed
// at or past both its applied position and its request's end, or holds no
// pointer any more; it keeps the rest, pending requests included.
func TestWebhookRecordDropsCommittedEpochs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hook.rec")
	var asked int
	committed := func(epochs []uint64) (map[uint64]int64, error) {
		asked++
		out := map[uint64]int64{}
		for _, ep := range epochs {
			switch {
			case ep%4 == 0: // committed past
				out[ep] = 1000
			case ep%4 == 1: // behind its applied position
				out[ep] = 50
			case ep%4 == 2: // forgotten: no pointer
			case ep%4 == 3: // past applied, not past the recorded request's end
				out[ep] = 100
			}
		}
		return out, nil
	}
	k := openBookAt(t, path, committed, true)
	for ep := uint64(1); ep <= 63; ep++ {
		if err := k.markApplied(ep, 100); err != nil {
			t.Fatal(err)
		}
		if ep%4 == 3 {
			if err := k.recordRange(ep, 108, 200); err != nil {
				t.Fatal(err)
			}
		}
	}
	if asked != 0 || len(k.ent) != 63 {
		t.Fatalf("before 64 entries: %d sweeps, %d entries", asked, len(k.ent))
	}
	if err := k.markApplied(64, 100); err != nil { // the 64th: a sweep
		t.Fatal(err)
	}
	if asked != 1 {
		t.Fatalf("%d sweeps, want 1", asked)
	}
	for ep := uint64(1); ep <= 64; ep++ {
		_, kept := k.ent[ep]
		if want := ep%4 == 1 || ep%4 == 3 || ep == 64; kept != want { // 64: the entry being stored
			t.Fatalf("epoch %d kept %v, want %v", ep, kept, want)
		}
	}
	if len(k.ent) != 33 || k.sweepAt != 66 {
		t.Fatalf("%d entries, next sweep at %d", len(k.ent), k.sweepAt)
	}
	want := table(k)
	k.close()
	if got := table(openBookAt(t, path, committed, true)); got != want {
		t.Fatalf("stored table differs:\n%s\n%s", got, want)
	}
}

// Past what a 128 KiB copy holds (no pointer says which entry may go),
// the record grows its copies and drops nothing; a reopen finds the newest
// copy of the larger size, and a torn store there leaves the previous one.
func TestWebhookRecordGrowsRatherThanDrops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hook.rec")
	k := openBookAt(t, path, nil, true)
	if err := k.recordRange(1, 8, 16); err != nil { // the oldest, pending
		t.Fatal(err)
	}
	const total = 10000
	for ep := uint64(2); ep < total; ep++ {
		k.touch(ep).Applied = 8 // as many stores would
	}
	if err := k.markApplied(total, 8); err != nil {
		t.Fatal(err)
	}
	if len(k.ent) != total {
		t.Fatalf("%d entries, want %d", len(k.ent), total)
	}
	st, _ := os.Stat(path)
	if st.Size() <= 2*wh2Copy || k.v2.size != 4*wh2Copy {
		t.Fatalf("record of %d bytes, copy size %d", st.Size(), k.v2.size)
	}
	if err := k.markApplied(total, 16); err != nil { // to copy A, of the new size
		t.Fatal(err)
	}
	want := table(k)
	k.close()
	k2 := openBookAt(t, path, nil, true)
	if got := table(k2); got != want || k2.v2.newest != 0 {
		t.Fatalf("reopened with %d entries (newest at %d)", len(k2.ent), k2.v2.newest)
	}
	if e := k2.ent[total]; e.used != k2.seq {
		t.Fatalf("the last stored entry is not the most recent one after a reopen (used %d of %d)", e.used, k2.seq)
	}
	k2.close()
	// Tear copy A: copy B (the grown one) is used.
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	f.WriteAt([]byte("garbage"), 40)
	f.Close()
	k3 := openBookAt(t, path, nil, true)
	if len(k3.ent) != total || k3.ent[total].Applied != 8 || k3.v2.newest != 4*wh2Copy {
		t.Fatalf("after a torn copy A: %d entries, newest at %d", len(k3.ent), k3.v2.newest)
	}
}

// CommittedIn reads real stream pointers: by the epoch's name, else by
// scanning the directory (a pointer keeps its first epoch's name); an
// epoch no pointer holds is left out.
func TestWebhookCommittedInReadsStreamPointers(t *testing.T) {
	dir := t.TempDir()
	mk := func(ep uint64, off int64) string {
		p := filepath.Join(dir, fmt.Sprintf("%016x.ptr", ep))
		ptr, err := pointer.Open(p, pointer.Options{Epoch: ep})
		if err != nil {
			t.Fatal(err)
		}
		if err := ptr.Commit(off); err != nil {
			t.Fatal(err)
		}
		ptr.Close()
		return p
	}
	mk(0xa1, 40)
	p := mk(0xb2, 64)
	if err := os.Rename(p, filepath.Join(dir, "00000000000000ff.ptr")); err != nil {
		t.Fatal(err)
	}
	got, err := CommittedIn(dir)([]uint64{0xa1, 0xb2, 0xc3})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "map[161:40 178:64]" {
		t.Fatalf("committed %v", got)
	}
	if _, err := CommittedIn(filepath.Join(dir, "nope"))([]uint64{0xc3}); err == nil {
		t.Fatal("a missing pointer directory is no error")
	}
}

// A table left large by a run whose pointers lagged (a slow subscriber) is
// swept at the first store after a start, not only once it doubles.
func TestWebhookRecordSweptAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hook.rec")
	k := openBookAt(t, path, nil, true) // no pointers known: nothing dropped
	for ep := uint64(1); ep <= 100; ep++ {
		k.touch(ep).Applied = 8
	}
	if err := k.markApplied(101, 8); err != nil {
		t.Fatal(err)
	}
	k.close()
	all := func(epochs []uint64) (map[uint64]int64, error) {
		out := map[uint64]int64{}
		for _, ep := range epochs {
			out[ep] = 8 // every file committed through what was applied
		}
		return out, nil
	}
	k2 := openBookAt(t, path, all, true)
	if len(k2.ent) != 101 {
		t.Fatalf("reopened with %d entries", len(k2.ent))
	}
	if err := k2.markApplied(102, 16); err != nil {
		t.Fatal(err)
	}
	if got := table(k2); got != "map[102:{16 0 0 0}]" {
		t.Fatalf("after the first store: %s", got)
	}
}

// The record keeps recency across a reopen (entries are stored least
// recently used first): two pending requests, B's recorded before A's
// although A's epoch is lower; after a reopen the one recorded last is
// still A's (PendingRequest names it), not the one with the higher epoch.
func TestWebhookRecordKeepsRecencyAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hook.rec")
	k := openBookAt(t, path, nil, true)
	if err := k.recordRange(epB, 8, 16); err != nil {
		t.Fatal(err)
	}
	if err := k.recordRange(epA, 40, 48); err != nil {
		t.Fatal(err)
	}
	k.close()
	k2 := openBookAt(t, path, nil, true)
	if a, b := k2.ent[epA], k2.ent[epB]; a == nil || b == nil || a.used <= b.used {
		t.Fatalf("after a reopen A's entry (recorded last) is not the most recent: %+v %+v", a, b)
	}
	w := &Webhook{book: k2}
	if got := w.PendingRequest(); got != "00000000000000a1:40-48" {
		t.Fatalf("pending %q after a reopen, want the request recorded last (A's)", got)
	}
}
