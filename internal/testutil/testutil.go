// Package testutil holds the test helpers several packages share (like
// bbolt's internal/btesting): numbered lines, a continuously appending and
// rotating writer, a child process holding a lock. Only tests import it.
package testutil

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Numbered returns n lines fmt.Sprintf(format, i) for i in [from, from+n);
// format holds one integer verb, e.g. "line-%05d".
func Numbered(format string, from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, from+i)
	}
	return out
}

// FirstDiff returns the first index where a and b differ, or the shorter
// length when one is a prefix of the other.
func FirstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// StartHolder runs the test binary again as a child with env=path set and
// no test selected (-test.run=^$): the package's TestMain must see env, take
// the lock on path, print "locked\n" and hold it until its stdin closes.
// The child is ended when the test ends; StartHolder returns its pid.
func StartHolder(t testing.TB, env, path string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("lock holder for %s: %v", path, err)
		}
	})
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("lock holder for %s said %q, %v", path, line, err)
	}
	return cmd.Process.Pid
}
