package pointer

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"tailfeed/internal/fileutil"
	"tailfeed/internal/testutil"
)

func TestOpenLockedByChildNamesItsPid(t *testing.T) {
	path := ptrPath(t)
	pid := testutil.StartHolder(t, holderEnv, path)

	_, err := Open(path, Options{})
	var le *fileutil.LockedError
	if !errors.As(err, &le) || le.Pid != pid {
		t.Fatalf("Open while pid %d holds the pointer = %v", pid, err)
	}
	if !strings.Contains(err.Error(), "locked by pid "+strconv.Itoa(pid)) {
		t.Fatalf("error %q does not name pid %d", err, pid)
	}
	if _, err := Inspect(path); err != nil { // pointer show takes no lock
		t.Fatalf("Inspect while locked: %v", err)
	}
}

func TestSecondOpenInProcessFails(t *testing.T) {
	path := ptrPath(t)
	p := mustOpen(t, path, Options{})
	_, err := Open(path, Options{})
	var le *fileutil.LockedError
	if !errors.As(err, &le) || le.Pid != os.Getpid() {
		t.Fatalf("second Open = %v, want locked by our pid", err)
	}
	p.Close()
	mustOpen(t, path, Options{})
}
