package file_test

import (
	"os"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// After a truncation is noticed, the lines read before it are still
// acknowledged under the old epoch and committed, but the descriptor no
// longer holds that epoch's bytes: the pointer's fingerprint must not grow
// over the new content (a crash before the barrier's Reset would leave a
// record whose fingerprint describes bytes the epoch never had).
func TestTruncationStopsFingerprintGrowth(t *testing.T) {
	t.Parallel()
	h1, h2 := make(chan struct{}), make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, batchLines: 1,
		hold: map[string]chan struct{}{"a-00010": h1, "a-00280": h2}})
	old := numbered("a", 0, 300) // 2,400 bytes: the fingerprint covers them all
	appendTo(t, r.path, old...)
	oldBytes, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	r.start()
	// The group holds a-00010; the queue (256 lines) fills; the source keeps
	// the rest of the file unpublished, so the file stays open after the
	// truncation is noticed.
	r.waitFor("a-00009 committed and the source paused", 10*time.Second, func() bool {
		return r.ptr.Record().Offset == 80 && r.pub.Paused()
	})
	rec := r.ptr.Record()
	if rec.FPLen != uint64(len(oldBytes)) || rec.FP != pointer.Fingerprint(oldBytes) {
		t.Fatalf("fingerprint covers %d bytes before the truncation, want %d", rec.FPLen, len(oldBytes))
	}
	e1 := rec.Epoch
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the truncation noticed", 10*time.Second, func() bool { return r.warned("truncated") })
	// New content that repeats the old first bytes, then goes on.
	appendTo(t, r.path, append(old, numbered("new", 0, 10)...)...)
	close(h1) // a-00010..a-00279 are acknowledged and committed under the old epoch
	r.waitFor("a-00279 committed", 10*time.Second, func() bool { return r.ptr.Record().Offset == 280*8 })
	rec = r.ptr.Record()
	if rec.Epoch != e1 || rec.FPLen != uint64(len(oldBytes)) || rec.FP != pointer.Fingerprint(oldBytes) {
		t.Fatalf("after the truncation the record is %+v: the fingerprint grew over the new content (want %d bytes)",
			rec, len(oldBytes))
	}
	close(h2)
	r.waitLine("new-00009")
	r.waitSettled()
	r.stop()
	size := int64(len(oldBytes) + 10*10)
	rec = r.ptr.Record()
	if rec.Epoch == e1 || rec.Offset != size || rec.FPLen != uint64(size) {
		t.Fatalf("pointer after the switch %+v, want a new epoch at %d with all of it fingerprinted", rec, size)
	}
	if n := len(r.rec.all()); n != 610 {
		t.Fatalf("delivered %d lines, want 610", n)
	}
}
