package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGlobWaitingFileDeletedAfterKill9IsCounted — DESIGN §4 "Nothing green
// over a loss", §10 "A file that disappears with an unread tail counts in
// lostTails"; README: the unread list is kept while running, so a kill -9
// leaves it too. Under maxOpenFiles 2 (one file at a time) and an unpolled
// pull client, c.log (3,000 lines) waits for its first turn, never read,
// no pointer naming it, long enough to be listed. The daemon is killed
// with SIGKILL and c.log deleted while it is down. The restart counts it:
// lostTails ≥ 1, lossless false, whatever it delivered of the rest.
// Before, a kill -9 wrote no list: c's lines were lost with the feed
// lossless.
func TestGlobWaitingFileDeletedAfterKill9IsCounted(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*.log
    rotateWaitMillis: 1000
    scanIntervalMillis: 1000
    maxOpenFiles: 2
    queueCapacity: 16
    maxPendingAcks: 16
processors:
  - name: pl
    feed: app
    type: pull
`)
	in := e.path("in")
	for _, f := range []string{"a", "b", "c", "d", "e"} {
		writeFileLines(t, filepath.Join(in, f+".log"), f, 0, 3000)
	}
	d := e.start()
	list := e.path("state/feeds/app/unread.list")
	waitUntil(t, "e.log named in the running unread list while BEHIND, never read", 30*time.Second, func() bool {
		b, _ := os.ReadFile(list)
		_, _, _, state, off, size, ok := aud3Row(getGlobStatus(t, d), "e.log")
		return strings.Contains(string(b), "e.log") && ok && state == "BEHIND" && off == 0 && size > 0
	})
	d.kill()
	st, err := os.Stat(filepath.Join(in, "e.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(in, "e.log")); err != nil {
		t.Fatal(err)
	}
	d = e.start()
	got := pullAckByFirstByte(t, d, "pl")
	r := d.waitSettled(30 * time.Second)
	f := r.feed(t, "app")
	if got['e'] != 0 {
		t.Fatalf("e.log was deleted while down, yet %d of its lines were delivered", got['e'])
	}
	if f.LostTails == 0 || f.Lossless || f.LostBytes != uint64(st.Size()) {
		t.Errorf("e.log (3,000 lines, never read, listed) deleted after a kill -9: lostTails %d lostBytes %d lossless %v; want ≥ 1, its size %d, false",
			f.LostTails, f.LostBytes, f.Lossless, st.Size())
	}
	for _, c := range []byte("abcd") {
		if got[c] < 3000 {
			t.Errorf("%c.log: %d lines delivered after the restart, want all 3,000 (duplicates allowed)", c, got[c])
		}
	}
	d.stop()
	// Nothing counted twice: a further start finds no list naming e.log.
	d = e.start()
	r = d.waitSettled(30 * time.Second)
	if f2 := r.feed(t, "app"); f2.LostTails != 0 {
		t.Errorf("a further restart counts again: lostTails %d", f2.LostTails)
	}
	d.stop()
}
