package sdnotify

import (
	"fmt"
	"net"
	"os"
	"testing"
	"time"
)

// An abstract socket ("@name", as systemd may set $NOTIFY_SOCKET) is
// reached as one; without $NOTIFY_SOCKET nothing is sent and nothing fails.
func TestNotifyAbstractAndUnset(t *testing.T) {
	name := fmt.Sprintf("tailfeed-sdnotify-test-%d", os.Getpid())
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "\x00" + name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Setenv("NOTIFY_SOCKET", "@"+name)
	if named, err := Notify("READY=1"); !named || err != nil {
		t.Fatalf("Notify: named %v, error %v", named, err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "READY=1" {
		t.Fatalf("read %q, %v; want READY=1", buf[:n], err)
	}
	t.Setenv("NOTIFY_SOCKET", "")
	if named, err := Notify("READY=1"); named || err != nil {
		t.Fatalf("without $NOTIFY_SOCKET: named %v, error %v", named, err)
	}
}
