package file_test

import (
	"os"
	"testing"
	"time"

	"tailfeed/pointer"
	"tailfeed/source/file"
)

// A rotation (create: app.log renamed to app.log.1, a new empty app.log)
// moves the pointer onto the new file with a Reset that can fingerprint
// nothing. Once a line of the new epoch is published, and before any of
// it is acknowledged, the record must hold the file's first bytes: else a
// kill -9 then, and a copytruncate while stopped (the published lines moved
// to a copy, other lines written at the path), restarts under the same
// epoch at the same positions for other bytes — an exactlyOnce sink that
// applied the first ones skips the new ones (DESIGN §4 "<feed>:<epoch>:
// <position> stays unique"). headFirst stores (epoch, 0, first bytes) and
// msyncs it before the epoch's first batch goes out.
func TestEpochOnEmptyFileRecordsFirstBytesBeforeItsFirstLine(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	notify := make(chan time.Time, 64)
	r := newRig(t, "", rigOpts{strategy: file.Committed, hold: map[string]chan struct{}{"b-00000": hold}, notify: notify})
	appendTo(t, r.path, numbered("a", 0, 3)...)
	r.start()
	r.waitLines(3)
	r.waitSettled()
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	id := identity(t, r.path)
	key := pointer.FileKey(id[0], id[1])
	r.waitFor("the pointer on the new file", 5*time.Second, func() bool { return r.ptr.Record().FileKey == key })
	if rec := r.ptr.Record(); rec.FPLen != 0 {
		t.Fatalf("reset onto an empty file: fingerprint length %d, want 0 (the case under test)", rec.FPLen)
	}
	for len(notify) > 0 {
		<-notify
	}
	appendTo(t, r.path, numbered("b", 0, 3)...)
	select {
	case <-notify: // b-00000 published and held by the subscriber: nothing of the epoch acknowledged
	case <-time.After(5 * time.Second):
		t.Fatal("b-0 not delivered")
	}
	rec := r.ptr.Record()
	body, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Offset != 0 || rec.FPLen == 0 || rec.FPLen > uint64(len(body)) || rec.FP != pointer.Fingerprint(body[:rec.FPLen]) {
		t.Fatalf("b-0 published, nothing acknowledged: record offset %d, fingerprint length %d (file %d bytes); want offset 0 and the file's first bytes",
			rec.Offset, rec.FPLen, len(body))
	}
	if !r.ptr.Synced() {
		t.Fatal("the record with the first bytes is not synced before the epoch's first line went out")
	}
	close(hold)
	r.waitLines(6)
}
