package file

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tailfeed/internal/fileutil"
)

// A torn .gz held against the read file of its name (heldTwin: its bytes
// so far, the shared header line, all that file's first bytes) completed
// with other lines between retryTorn's twin check and its decompression
// (CI of f1c560f: TestRev25ERB2TornGzAtTheScanToldTwinByAHeaderPrefix, 0
// of its "z" lines delivered, lostTails 0). The check had read it as the
// twin's prefix, the decompression read it whole, and it was dropped as the
// twin's compressed copy — neither read nor counted. It is told again by
// the bytes decompressed: not the twin's, it is read beside the current
// file. Not parallel: it sets the package's tornLooked.
func TestTornGzCompletedBetweenTwinCheckAndReadIsRead(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	twin := in + ".1"
	const hdr = "# app started\n"
	if err := os.WriteFile(twin, []byte(hdr+"b-0\nb-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, []byte(hdr+"c-0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(hdr))
	if err := zw.Flush(); err != nil {
		t.Fatal(err)
	}
	torn := b.Len()
	zw.Write([]byte("z-0\nz-1\nz-2\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	full := b.Bytes()
	gz := in + ".1.gz"
	if err := os.WriteFile(gz, full[:torn], 0o644); err != nil {
		t.Fatal(err)
	}
	dev, ino, err := fileutil.DevInoPath(gz)
	if err != nil {
		t.Fatal(err)
	}
	tdev, tino, err := fileutil.DevInoPath(twin)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Feed: "app", Path: in, Strategy: Committed, MaxLine: 1 << 16, RotatedNames: []string{"app.log.*.gz"}}, nil)
	defer func() {
		for _, r := range s.old {
			r.close()
		}
	}()
	s.torn = []genFile{{path: gz, dev: dev, ino: ino, size: int64(torn), grewAt: time.Now(),
		heldTwin: [2]uint64{tdev, tino}, twinPath: twin, twinHead: []byte(hdr + "b-0\nb-1\n")}}

	// First look: torn, its header the twin's prefix — held, waited for.
	s.retryTorn()
	if len(s.torn) != 1 || s.torn[0].heldTwin == ([2]uint64{}) || len(s.old) != 0 {
		t.Fatalf("first look: %d torn (heldTwin %v), %d read; want 1 held, none read", len(s.torn), s.torn[0].heldTwin, len(s.old))
	}
	// Second look: completed after its twin check, before its read.
	tornLooked = func(p string) {
		if err := os.WriteFile(p, full, 0o644); err != nil {
			t.Error(err)
		}
	}
	defer func() { tornLooked = nil }()
	s.retryTorn()
	if len(s.old) != 1 && s.LostTails() == 0 {
		t.Fatalf("app.log.1.gz (the header + 3 z lines, not the twin's): %d torn, %d read, lostTails 0 — dropped as the twin's copy", len(s.torn), len(s.old))
	}
	if len(s.old) == 1 && string(s.old[0].head) != hdr+"z-0\nz-1\nz-2\n" {
		t.Errorf("read as a .gz whose first bytes are %q, want its own", s.old[0].head)
	}
}

// Review 44 F3: retryTorn checked a torn .gz's identity at its path, then
// opened the path again to decompress it. A logrotate shift in between
// (app.log.1.gz renamed to app.log.2.gz, a complete app.log.1.gz made)
// gave the decompression the other file: taken for the torn one's
// content, then not found as it (its first bytes differ), the torn .gz was
// dropped — neither read nor counted. One descriptor now serves every look
// of a pass: the torn one stays waited for (followed to its new name).
func TestTornGzShiftedBetweenItsChecksStaysWaitedFor(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	if err := os.WriteFile(in, []byte("c-0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gzOf := func(lines string, whole bool) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(lines))
		if !whole {
			if err := zw.Flush(); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	gz := in + ".1.gz"
	torn := gzOf("a-0\na-1\n", false)
	if err := os.WriteFile(gz, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	dev, ino, err := fileutil.DevInoPath(gz)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Feed: "app", Path: in, Strategy: Committed, MaxLine: 1 << 16, RotatedNames: []string{"app.log.*.gz"}}, nil)
	defer func() {
		for _, r := range s.old {
			r.close()
		}
	}()
	s.torn = []genFile{{path: gz, dev: dev, ino: ino, size: int64(len(torn)), grewAt: time.Now()}}
	tornLooked = func(p string) {
		if err := os.Rename(p, in+".2.gz"); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(p, gzOf("b-0\n", true), 0o644); err != nil {
			t.Error(err)
		}
	}
	defer func() { tornLooked = nil }()
	s.retryTorn()
	if len(s.torn) != 1 && s.LostTails() == 0 {
		t.Fatalf("the torn app.log.1.gz, shifted to app.log.2.gz within the look (a complete .gz made at its name): %d torn, %d read, lostTails 0 — dropped, neither waited for nor counted", len(s.torn), len(s.old))
	}
	tornLooked = nil
	s.retryTorn() // followed to its new name
	if len(s.torn) != 1 || s.torn[0].path != in+".2.gz" {
		t.Fatalf("next look: %d torn (%v), want it waited for at app.log.2.gz", len(s.torn), s.torn)
	}
}
