package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/internal/testutil"
)

// Rename rotation across kill -9: a writer appends continuously and
// rotates the file (rename, reopen) every ~120 ms; the built daemon is
// killed with SIGKILL at random moments, sometimes with a rotation while
// it is down, and restarted. Every line written, in any generation, is in
// the output at least once. (Moved here from source/file, which built the
// binary for it.)
func TestKill9AcrossRotation(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary through 7 starts and 6 kills")
	}
	e := newEnv(t, `dataDir: ./state
status: {listen: "{{ADDR}}"}
feeds:
  - name: app
    path: ./app.log
    pollIntervalMillis: 50
    rotateWaitMillis: 300
processors:
  - name: archive
    feed: app
    type: file
    path: ./out.log
`)
	path := e.path("app.log")
	w := testutil.StartWriter(t, path)
	out := e.path("out.log")
	var rotations atomic.Int32
	// Rotations faster than the daemon looks, or two while it is down, can
	// skip a generation (source/file doc.go, Known limitations): rotate only
	// once the output shows the daemon reads the current generation.
	rotate := func() {
		if lastGen(out) != w.Gen() {
			return
		}
		k := rotations.Add(1)
		w.Rotate(fmt.Sprintf("%s.%d", path, k))
	}
	stopRot := make(chan struct{})
	var wg sync.WaitGroup
	running := atomic.Bool{}
	wg.Go(func() {
		for {
			select {
			case <-stopRot:
				return
			case <-time.After(120 * time.Millisecond):
				if running.Load() {
					rotate()
				}
			}
		}
	})
	for round := 0; round < 6; round++ {
		d := e.start()
		running.Store(true)
		time.Sleep(150*time.Millisecond + rand.N(250*time.Millisecond))
		running.Store(false)
		d.kill()
		if round%2 == 1 {
			rotate() // one rotation while it is down
		}
	}
	close(stopRot)
	wg.Wait()
	total := w.Finish()
	d := e.start()
	d.waitSettled(30 * time.Second)
	d.stop()

	of, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer of.Close()
	seen := make([]int, total)
	sc := bufio.NewScanner(of)
	n := 0
	for sc.Scan() {
		var gen, i int
		if _, err := fmt.Sscanf(sc.Text(), "g%d line %d", &gen, &i); err != nil || i >= total {
			t.Fatalf("output line %q is no line written", sc.Text())
		}
		seen[i]++
		n++
	}
	for i, c := range seen {
		if c == 0 {
			t.Fatalf("line %d of %d never delivered (%d rotations)", i, total, rotations.Load())
		}
	}
	t.Logf("%d lines over %d rotations and 6 kills: %d output lines (%d duplicates)", total, rotations.Load(), n, n-total)
}

// lastGen is the generation of the last complete line of the output (-1
// when there is none).
func lastGen(out string) int64 {
	f, err := os.Open(out)
	if err != nil {
		return -1
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return -1
	}
	n := min(st.Size(), 256)
	b := make([]byte, n)
	if _, err := f.ReadAt(b, st.Size()-n); err != nil {
		return -1
	}
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	var gen int64
	if _, err := fmt.Sscanf(string(b), "g%d", &gen); err != nil {
		return -1
	}
	return gen
}
