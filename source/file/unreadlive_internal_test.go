package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/pointer"
)

// TestLiveUnreadKeyReusedIsWrittenAgain: a listed waiting file deleted (the
// glob counts it) and its key given to another waiting file before the
// next pass: the running list must name the new file's first bytes at
// once, not keep the old file's (cached by key), or a restart after a
// kill -9 finds the key with other first bytes and counts the old file,
// already counted, once more (the review's suspicion of the eighth
// session, untested then).
func TestLiveUnreadKeyReusedIsWrittenAgain(t *testing.T) {
	t.Parallel()
	g, dir := newListGlob(t)
	ptrs := g.cfg.PointerDir
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	if err := os.WriteFile(a, []byte("aaaa 1\naaaa 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("bbbb 1\nbbbb 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const key = 42
	sa := &gstream{path: a, key: key, st: stQueued, size: 14}
	g.byKey[key] = sa
	now := time.Now()
	// Waiting for a slot (never started): listed at the first pass
	// (listAtOnce), not after unreadListDelay (aud7 C).
	if ws, ok := g.liveUnreadDue(now); !ok || len(ws) != 1 {
		t.Fatalf("a file waiting for a slot: due %v, %d entries at the first pass; want one", ok, len(ws))
	}
	ws, ok := g.liveUnreadDue(now.Add(2 * unreadListDelay))
	if !ok || len(ws) != 1 {
		t.Fatalf("a.log waiting 2 s: due %v, %d entries; want one", ok, len(ws))
	}
	g.writeLiveUnread(ws)
	// a.log deleted and counted; b.log, as long, found under its key.
	sb := &gstream{path: b, key: key, st: stQueued, size: 14}
	g.byKey[key] = sb
	ws, ok = g.liveUnreadDue(now.Add(3 * unreadListDelay))
	if !ok {
		t.Fatal("the key now another waiting file's: the list is not written again")
	}
	g.writeLiveUnread(ws)
	raw, err := os.ReadFile(filepath.Join(ptrs, unreadListName))
	if err != nil {
		t.Fatal(err)
	}
	want := pointer.Fingerprint([]byte("bbbb 1\nbbbb 2\n"))
	if got := g.live.written[key]; got.FP != want || got.Path != b {
		t.Errorf("the list names %s with fp %x, want b.log's %x; on disk: %s", got.Path, got.FP, want, strings.TrimSpace(string(raw)))
	}
}

// newListGlob is a bare Glob for the unread list's tests: a pointer
// directory in a temporary dir (returned), no streams.
func newListGlob(t *testing.T) (*Glob, string) {
	t.Helper()
	dir := t.TempDir()
	ptrs := filepath.Join(dir, "ptrs")
	if err := os.Mkdir(ptrs, 0o700); err != nil {
		t.Fatal(err)
	}
	return &Glob{cfg: GlobConfig{PointerDir: ptrs}, log: hclog.NewNullLogger(), byKey: map[uint64]*gstream{}}, dir
}
