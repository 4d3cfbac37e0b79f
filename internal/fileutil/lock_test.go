package fileutil

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"tailfeed/internal/testutil"
)

func openFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestLockHeldByChildNamesItsPid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	pid := testutil.StartHolder(t, holderEnv, path)

	err := Lock(openFile(t, path))
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("Lock = %v, want *LockedError", err)
	}
	if le.Pid != pid || le.Path != path {
		t.Fatalf("LockedError = %+v, want pid %d path %s", le, pid, path)
	}
	want := path + ": locked by pid " + strconv.Itoa(pid)
	if err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err, want)
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("errors.Is(%v, EWOULDBLOCK) = false", err)
	}
	if got, ok := HolderPid(openFile(t, path)); !ok || got != pid {
		t.Fatalf("HolderPid = %d, %v, want %d", got, ok, pid)
	}
}

func TestLockSecondDescriptorInSameProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	if err := Lock(openFile(t, path)); err != nil {
		t.Fatal(err)
	}
	err := Lock(openFile(t, path))
	var le *LockedError
	if !errors.As(err, &le) || le.Pid != os.Getpid() {
		t.Fatalf("Lock = %v, want locked by our own pid %d", err, os.Getpid())
	}
}

func TestUnlockLetsOthersLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	a, b := openFile(t, path), openFile(t, path)
	if err := Lock(a); err != nil {
		t.Fatal(err)
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := Lock(b); err != nil {
		t.Fatalf("Lock after Unlock: %v", err)
	}
}

func TestCloseReleasesLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "LOCK")
	a := openFile(t, path)
	if err := Lock(a); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := Lock(openFile(t, path)); err != nil {
		t.Fatalf("Lock after Close: %v", err)
	}
}

func TestLockedErrorWithoutPid(t *testing.T) {
	err := &LockedError{Path: "/d/LOCK"}
	if got := err.Error(); got != "/d/LOCK: locked by another process" {
		t.Fatalf("Error() = %q", got)
	}
}

func TestParseLocks(t *testing.T) {
	const text = `1: POSIX  ADVISORY  WRITE 100 fe:00:42 0 EOF
2: FLOCK  ADVISORY  WRITE 200 fe:01:42 0 EOF
2: -> FLOCK  ADVISORY  WRITE 300 fe:00:42 0 EOF
3: OFDLCK ADVISORY  WRITE -1 fe:00:42 0 EOF
4: FLOCK  ADVISORY  WRITE 400 fe:00:42 0 EOF
5: FLOCK  ADVISORY  WRITE 500 103:1a:7 0 EOF
garbage
`
	tests := []struct {
		name              string
		major, minor, ino uint64
		pid               int
		ok                bool
	}{
		{"flock skips posix, waiter and other device", 0xfe, 0, 42, 400, true},
		{"other minor", 0xfe, 1, 42, 200, true},
		{"hex device numbers", 0x103, 0x1a, 7, 500, true},
		{"no lock on inode", 0xfe, 0, 43, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid, ok := parseLocks(strings.NewReader(text), tt.major, tt.minor, tt.ino)
			if pid != tt.pid || ok != tt.ok {
				t.Fatalf("parseLocks = %d, %v, want %d, %v", pid, ok, tt.pid, tt.ok)
			}
		})
	}
}
