// Package sdnotify tells a service manager (systemd's Type=notify) the
// daemon's state through $NOTIFY_SOCKET: READY=1 once it serves, RELOADING=1
// and READY=1 around a reload, STOPPING=1 at a stop (sd_notify(3)). Without
// $NOTIFY_SOCKET it does nothing.
//
// Why it matters: a Go program cannot catch a signal before its runtime and
// package initialisation ran (a few milliseconds after exec); a SIGHUP in
// that window takes the default action and ends the process. Under
// Type=notify, systemd starts no reload (ExecReload's SIGHUP) before
// READY=1, by which time SIGHUP is caught.
package sdnotify

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// Notify sends state (newline-separated KEY=VALUE assignments) to
// $NOTIFY_SOCKET. It reports whether a socket was named; the error is the
// send's.
func Notify(state string) (bool, error) {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return false, nil
	}
	if name[0] == '@' {
		name = "\x00" + name[1:] // an abstract socket
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return true, err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return true, err
}

// Reloading is the state a reload starts with: RELOADING=1 and the
// monotonic clock now (MONOTONIC_USEC, which systemd's notify-reload
// services must send with it).
func Reloading() string {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return "RELOADING=1"
	}
	return fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", ts.Nano()/1000)
}
