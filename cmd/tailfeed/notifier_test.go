package main

import (
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The notifier's order (review 12a): a reload that began during the start
// sends no RELOADING=1 and delays the start's READY=1 to its end (READY=1
// never while a reload runs); after STOPPING=1 nothing is sent.
func TestNotifierOrder(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "n.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	var got []string
	read := func() {
		for {
			c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			buf := make([]byte, 256)
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			got = append(got, string(buf[:n]))
		}
	}
	n := &notifier{log: hclog.NewNullLogger()}
	n.reload(func() {
		n.ready() // the start ends while the reload runs
		read()
		if len(got) != 0 {
			t.Errorf("during a reload begun before the start ended: %q, want nothing", got)
		}
	})
	read()
	n.stopping()
	n.reload(func() {})
	n.ready()
	read()
	want := []string{"READY=1", "STOPPING=1"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("notifications %q, want %q", got, want)
	}
}
