package fileutil

import (
	"fmt"
	"io"
	"os"
	"testing"
)

// holderEnv names the file a re-executed test binary locks and holds until
// its stdin closes (the os/exec tests' helper-process idiom).
const holderEnv = "FILEUTIL_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if path := os.Getenv(holderEnv); path != "" {
		os.Exit(holdLock(path))
	}
	os.Exit(m.Run())
}

// holdLock locks path, says "locked" on stdout, and waits for stdin to close.
func holdLock(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := Lock(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	return 0
}
