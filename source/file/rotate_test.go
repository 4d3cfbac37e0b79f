package file_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tailfeed/internal/testutil"
	"tailfeed/pointer"
	"tailfeed/source/file"
)

// Acceptance 1: a writer appending continuously while the file is
// rename-rotated 5 times: every line written, to any generation, is
// delivered once; each generation's positioned lines carry one epoch of
// their own and the exact offset after the line in that file.
func TestRenameRotationWhileWriting(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	w := testutil.StartWriter(t, r.path)
	r.start()
	const rotations = 5
	files := []string{}
	for k := 1; k <= rotations; k++ {
		time.Sleep(60 * time.Millisecond)
		// Rotations faster than the source looks can skip a generation
		// (doc.go, Known limitations): rotate once it reads this one.
		id := identity(t, r.path)
		r.waitFor("the source on the current generation", 10*time.Second, func() bool {
			dev, ino, _ := r.src.FileIdentity()
			return [2]uint64{dev, ino} == id
		})
		to := fmt.Sprintf("%s.%d", r.path, k)
		w.Rotate(to)
		files = append(files, to)
	}
	time.Sleep(60 * time.Millisecond)
	total := w.Finish()
	files = append(files, r.path)
	gs := r.waitLines(total)
	r.waitSettled()
	gs = r.rec.all()

	c := counts(gs)
	for i := 0; i < total; i++ {
		found := 0
		for g := 0; g <= rotations; g++ {
			found += c[fmt.Sprintf("g%d line %07d", g, i)]
		}
		if found != 1 {
			t.Fatalf("line %d delivered %d times", i, found)
		}
	}
	if len(gs) != total {
		t.Fatalf("delivered %d lines, wrote %d", len(gs), total)
	}
	ends := map[string]int64{}
	for _, p := range files {
		for l, e := range lineEnds(t, p) {
			ends[l] = e
		}
	}
	epochs := map[int]uint64{}
	seen := map[uint64]int{}
	for _, g := range gs {
		if !g.Positioned {
			continue
		}
		var gen int
		fmt.Sscanf(g.Line, "g%d", &gen)
		if e, ok := epochs[gen]; ok && e != g.Epoch {
			t.Fatalf("generation %d under two epochs %x and %x", gen, e, g.Epoch)
		}
		if other, ok := seen[g.Epoch]; ok && other != gen {
			t.Fatalf("epoch %x shared by generations %d and %d", g.Epoch, other, gen)
		}
		epochs[gen], seen[g.Epoch] = g.Epoch, gen
		if g.Pos != ends[g.Line] {
			t.Fatalf("%q at position %d, the file has it ending at %d", g.Line, g.Pos, ends[g.Line])
		}
	}
	if len(epochs) != rotations+1 {
		t.Fatalf("%d generations had positioned lines, want %d", len(epochs), rotations+1)
	}
	rec := r.ptr.Record()
	st, _ := os.Stat(r.path)
	if rec.Epoch != epochs[rotations] || rec.Offset != st.Size() {
		t.Fatalf("pointer (%x, %d), want (%x, %d)", rec.Epoch, rec.Offset, epochs[rotations], st.Size())
	}
	t.Logf("%d lines over %d files, %d downgraded", total, len(files), r.src.Downgraded())
}

// Acceptance 2: truncation in place, then appends: the new lines arrive
// under a new epoch, nothing from before is delivered again, the reason is
// a WARN and the feed's detail.
func TestTruncateInPlaceThenAppend(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("before", 0, 100)...)
	r.start()
	r.waitLines(100)
	r.waitSettled()
	e1 := r.src.Epoch()
	if err := os.Truncate(r.path, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("after", 0, 10)...)
	gs := r.waitLines(110)
	r.waitSettled()
	gs = r.rec.all()
	if len(gs) != 110 {
		t.Fatalf("got %d lines, want 110: %v", len(gs), lines(gs[100:]))
	}
	ends := lineEnds(t, r.path)
	for i, g := range gs[100:] {
		if want := fmt.Sprintf("after-%05d", i); g.Line != want || g.Epoch == e1 || g.Pos != ends[want] {
			t.Fatalf("line %d: %+v, want %q at %d under a new epoch (old %x)", i, g, want, ends[want], e1)
		}
	}
	e2 := r.src.Epoch()
	if e2 == e1 || e2 != gs[109].Epoch {
		t.Fatalf("source epoch %x, old %x, lines under %x", e2, e1, gs[109].Epoch)
	}
	if !strings.Contains(r.src.Detail(), "truncated") || !r.warned("truncated") {
		t.Fatalf("detail %q; WARN logged: %v", r.src.Detail(), r.warned("truncated"))
	}
	st, _ := os.Stat(r.path)
	if rec := r.ptr.Record(); rec.Epoch != e2 || rec.Offset != st.Size() {
		t.Fatalf("pointer (%x, %d), want (%x, %d)", rec.Epoch, rec.Offset, e2, st.Size())
	}
}

// Content rewritten in place, longer than what was read (so only the
// fingerprint can tell): read again from the start under a new epoch.
func TestReplacedInPlaceLonger(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Earliest})
	appendTo(t, r.path, numbered("old", 0, 20)...)
	r.start()
	r.waitLines(20)
	r.waitSettled()
	e1 := r.src.Epoch()
	f, err := os.OpenFile(r.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Join(numbered("NEW", 0, 40), "\n")+"\n"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	gs := r.waitLines(60)
	r.waitSettled()
	gs = r.rec.all()
	if len(gs) != 60 {
		t.Fatalf("got %d lines, want 60", len(gs))
	}
	for i, g := range gs[20:] {
		if want := fmt.Sprintf("NEW-%05d", i); g.Line != want || g.Epoch == e1 {
			t.Fatalf("line %d: %+v, want %q under a new epoch", i, g, want)
		}
	}
	if !strings.Contains(r.src.Detail(), "replaced in place") || !r.warned("replaced in place") {
		t.Fatalf("detail %q", r.src.Detail())
	}
}

// Acceptance 3: a file renamed over the path with other content is read
// from its start under a new epoch. The subscriber is slow, so old lines
// are in flight when the source switches; their acknowledgements never
// reach the new epoch's pointer (every record seen under the new epoch holds
// 0 or an offset after one of the new file's lines).
func TestRenameOverWithSlowSubscriber(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, delay: 2 * time.Millisecond, batchLines: 16})
	appendTo(t, r.path, numbered("a", 0, 150)...)
	r.start()
	r.waitLines(10)
	e1 := r.src.Epoch()
	newFile := r.path + ".new"
	appendTo(t, newFile, numbered("b", 0, 40)...)
	bID := identity(t, newFile)
	bEnds := lineEnds(t, newFile)

	type sample struct {
		rec      pointer.Record
		switched bool // the source had the new file open
		got      int
	}
	var mu sync.Mutex
	var samples []sample
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			dev, ino, _ := r.src.FileIdentity()
			s := sample{rec: r.ptr.Record(), switched: [2]uint64{dev, ino} == bID, got: r.rec.len()}
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
			time.Sleep(200 * time.Microsecond)
		}
	})
	if err := os.Rename(newFile, r.path); err != nil {
		t.Fatal(err)
	}
	r.waitLines(190)
	r.waitSettled()
	close(stop)
	wg.Wait()

	gs := r.rec.all()
	if len(gs) != 190 {
		t.Fatalf("got %d lines, want 190", len(gs))
	}
	for i, g := range gs {
		if i < 150 {
			if g.Line != fmt.Sprintf("a-%05d", i) || g.Epoch != e1 {
				t.Fatalf("line %d: %+v", i, g)
			}
			continue
		}
		if want := fmt.Sprintf("b-%05d", i-150); g.Line != want || g.Epoch == e1 || g.Pos != bEnds[want] {
			t.Fatalf("line %d: %+v, want %q at %d under a new epoch", i, g, want, bEnds[want])
		}
	}
	e2 := gs[150].Epoch
	valid := map[int64]bool{0: true}
	for _, e := range bEnds {
		valid[e] = true
	}
	inFlight := false
	for _, s := range samples {
		if s.rec.Epoch == e2 && !valid[s.rec.Offset] {
			t.Fatalf("pointer (%x, %d) under the new epoch is no line end of the new file", e2, s.rec.Offset)
		}
		if s.rec.Epoch != e1 && s.rec.Epoch != e2 {
			t.Fatalf("pointer under a third epoch %x", s.rec.Epoch)
		}
		if s.switched && s.got < 150 {
			inFlight = true
		}
	}
	if !inFlight {
		t.Fatalf("the switch never happened while old lines were in flight (%d samples)", len(samples))
	}
	if rec := r.ptr.Record(); rec.Epoch != e2 || rec.Offset != bEnds["b-00039"] {
		t.Fatalf("pointer (%x, %d), want (%x, %d)", rec.Epoch, rec.Offset, e2, bEnds["b-00039"])
	}
}

// Acceptance 4 and the missing path: lines written to the deleted file
// through the writer's descriptor are still read; once it stayed still for
// rotateWait the feed is WAITING_FOR_FILE; a new file at the path is picked
// up without a restart, from its start under a new epoch.
func TestDeleteWaitRecreate(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 10)...)
	r.start()
	r.waitLines(10)
	e1 := r.src.Epoch()
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(r.path); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "a-%05d\na-%05d\n", 10, 11)
	r.waitLines(12)
	f.Close()
	r.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	if _, _, open := r.src.FileIdentity(); open {
		t.Fatal("a file is still reported open while waiting for the file")
	}
	appendTo(t, r.path, numbered("b", 0, 5)...)
	gs := r.waitLines(17)
	r.waitSettled()
	if c := counts(r.rec.all()); len(c) != 17 {
		t.Fatalf("got %d distinct lines of %d", len(c), r.rec.len())
	}
	for i, g := range gs[12:] {
		if g.Line != fmt.Sprintf("b-%05d", i) || g.Epoch == e1 {
			t.Fatalf("line %d: %+v", i, g)
		}
	}
	if rec := r.ptr.Record(); rec.Epoch != gs[16].Epoch || rec.Epoch != r.src.Epoch() {
		t.Fatalf("pointer epoch %x, lines %x, source %x", rec.Epoch, gs[16].Epoch, r.src.Epoch())
	}
}

// Acceptance 5: the path replaced between the stat and the open (injected
// through OpenHook), at start and again at a rotation: the open file is
// never labelled with another file's identity, and its lines carry its own
// offsets.
func TestOpenRace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var races atomic.Int32
	var swap atomic.Pointer[[]string] // the next hook call renames this content onto the path
	r := newRig(t, dir, rigOpts{strategy: file.Committed, openHook: func() {
		if p := swap.Swap(nil); p != nil {
			races.Add(1)
			replaceWith(t, appPath(dir), (*p)...)
		}
	}})
	appendTo(t, r.path, numbered("first", 0, 5)...)
	second := numbered("second", 0, 7)
	swap.Store(&second)
	r.start()
	gs := r.waitLines(7)
	r.waitSettled()
	for i, g := range gs {
		if g.Line != second[i] {
			t.Fatalf("line %d: %q, want %q (the file the path named after the open)", i, g.Line, second[i])
		}
	}
	checkIdentity(t, r)
	if rec := r.ptr.Record(); rec.FileKey != keyOf(t, r.path) {
		t.Fatalf("pointer file key %x, the file's %x", rec.FileKey, keyOf(t, r.path))
	}

	// Rotation: the file at the path is replaced once more while the
	// source opens it.
	fourth := numbered("fourth", 0, 4)
	swap.Store(&fourth)
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("third", 0, 3)...)
	r.waitFor("the fourth file", 10*time.Second, func() bool {
		for _, g := range r.rec.all() {
			if g.Line == "fourth-00003" {
				return true
			}
		}
		return false
	})
	r.waitSettled()
	ends := lineEnds(t, r.path)
	for _, g := range r.rec.all()[7:] {
		if strings.HasPrefix(g.Line, "fourth") && g.Pos != ends[g.Line] {
			t.Fatalf("%q at %d, the file has it at %d", g.Line, g.Pos, ends[g.Line])
		}
	}
	checkIdentity(t, r)
	if races.Load() != 2 {
		t.Fatalf("%d races injected, want 2", races.Load())
	}
}

func appPath(dir string) string { return dir + "/app.log" }

func checkIdentity(t *testing.T, r *rig) {
	t.Helper()
	dev, ino, open := r.src.FileIdentity()
	if want := identity(t, r.path); !open || [2]uint64{dev, ino} != want {
		t.Fatalf("source reports file %d/%d (open %v), the path names %v", dev, ino, open, want)
	}
}

func keyOf(t testing.TB, path string) uint64 {
	id := identity(t, path)
	return pointer.FileKey(id[0], id[1])
}

// Acceptance 8: bytes appended to the old file after the switch are
// delivered without a position and counted; they move no pointer.
func TestAppendToOldFileAfterSwitchIsDowngraded(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 3 * time.Second})
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	r.waitLines(5)
	e1 := r.src.Epoch()
	old := r.path + ".1"
	if err := os.Rename(r.path, old); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("b", 0, 3)...)
	r.waitLines(8)
	r.waitSettled()
	e2 := r.src.Epoch()
	if e2 == e1 {
		t.Fatal("no new epoch after the rotation")
	}
	appendTo(t, old, "late-1", "late-2")
	gs := r.waitLines(10)
	r.waitSettled()
	for _, g := range gs[8:] {
		if g.Positioned || !strings.HasPrefix(g.Line, "late-") {
			t.Fatalf("late line %+v delivered with a position", g)
		}
	}
	if d := r.src.Downgraded(); d != 2 {
		t.Fatalf("downgraded %d, want 2", d)
	}
	st, _ := os.Stat(r.path)
	if rec := r.ptr.Record(); rec.Epoch != e2 || rec.Offset != st.Size() {
		t.Fatalf("pointer (%x, %d), want (%x, %d)", rec.Epoch, rec.Offset, e2, st.Size())
	}
}

// A partial line is never glued to other bytes: the renamed file's partial
// line stays its own, completed there later it is delivered (downgraded),
// and the new file's first line is delivered alone.
func TestPartialLineNotGluedAcrossRotation(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Earliest, rotateWait: 3 * time.Second})
	if err := os.WriteFile(r.path, []byte("x-1\npart"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.waitLines(1)
	old := r.path + ".1"
	if err := os.Rename(r.path, old); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, "y-1")
	r.waitLines(2)
	appendTo(t, old, "ial")
	gs := r.waitLines(3)
	r.waitSettled()
	if got := lines(r.rec.all()); strings.Join(got, "|") != "x-1|y-1|partial" {
		t.Fatalf("lines %q", got)
	}
	if gs[2].Positioned {
		t.Fatal("the completed line of the old file kept a position")
	}
}

// Acceptance 9: the same content under a new key (cp + mv of the same
// bytes plus appended ones onto the path) while tailing keeps the epoch and
// the position, with a WARN; the partial line is read once, from its start.
func TestSameContentNewKeyKeepsEpoch(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	appendTo(t, r.path, numbered("a", 0, 30)...)
	f, _ := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("part")
	f.Close()
	r.start()
	r.waitLines(30)
	r.waitSettled()
	e1 := r.src.Epoch()
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte("ial\n"+strings.Join(numbered("a", 30, 5), "\n")+"\n")...)
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		t.Fatal(err)
	}
	gs := r.waitLines(36)
	r.waitSettled()
	gs = r.rec.all()
	if len(gs) != 36 {
		t.Fatalf("got %d lines, want 36: %q", len(gs), lines(gs[30:]))
	}
	ends := lineEnds(t, r.path)
	for i, g := range gs {
		if g.Epoch != e1 || g.Pos != ends[g.Line] || !g.Positioned {
			t.Fatalf("line %d: %+v, want epoch %x, position %d", i, g, e1, ends[g.Line])
		}
	}
	if gs[30].Line != "partial" {
		t.Fatalf("line 30 is %q, want \"partial\"", gs[30].Line)
	}
	if !r.warned("same content") {
		t.Fatal("no WARN about the same content under a new key")
	}
	rec := r.ptr.Record()
	if rec.Epoch != e1 || rec.Offset != int64(len(data)) || rec.FileKey != keyOf(t, r.path) {
		t.Fatalf("pointer %+v, want epoch %x, offset %d, key %x", rec, e1, len(data), keyOf(t, r.path))
	}
	checkIdentity(t, r)
}

// The same content under a new key (case D: cp A A.tmp; echo more >>
// A.tmp; mv A.tmp A) while the application still appends to A's old inode:
// the old file is watched for rotateWait like after any switch (DESIGN §4),
// its new lines are delivered downgraded, under an epoch of their own so
// that no (epoch, position) names two lines.
func TestSameContentNewKeyWatchesOldFile(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed, rotateWait: 2 * time.Second})
	appendTo(t, r.path, numbered("a", 0, 10)...)
	app, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0) // the application's descriptor
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	r.start()
	r.waitLines(10)
	r.waitSettled()
	e1 := r.src.Epoch()
	data, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	tmp := r.path + ".tmp"
	if err := os.WriteFile(tmp, append(data, "b-0\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, r.path); err != nil {
		t.Fatal(err)
	}
	r.waitLines(11)
	if _, err := app.WriteString("late-0\nlate-1\n"); err != nil { // to the old inode
		t.Fatal(err)
	}
	r.waitLines(13)
	r.waitSettled()
	r.stop()
	gs := r.rec.all()
	c := counts(gs)
	if len(gs) != 13 || c["late-0"] != 1 || c["late-1"] != 1 || c["b-0"] != 1 {
		t.Fatalf("delivered %q, want a-0..9, b-0, late-0, late-1 once each", lines(gs))
	}
	if r.src.Downgraded() != 2 {
		t.Fatalf("downgraded %d, want 2", r.src.Downgraded())
	}
	seen := map[[2]uint64]string{}
	for _, g := range gs {
		switch {
		case strings.HasPrefix(g.Line, "late"):
			if g.Positioned || g.Epoch == e1 {
				t.Fatalf("%s delivered as %+v: want no position, an epoch other than %x", g.Line, g, e1)
			}
		case g.Epoch != e1 || !g.Positioned:
			t.Fatalf("%s delivered as %+v: want epoch %x, positioned", g.Line, g, e1)
		}
		k := [2]uint64{g.Epoch, uint64(g.Pos)}
		if other, ok := seen[k]; ok {
			t.Fatalf("%s and %s share (epoch %x, position %d)", other, g.Line, g.Epoch, g.Pos)
		}
		seen[k] = g.Line
	}
}

// The watcher goroutine ends with the source.
func TestStopLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	r := newRig(t, "", rigOpts{strategy: file.Earliest})
	appendTo(t, r.path, "x")
	r.start()
	r.waitLines(1)
	r.stop()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Further rotations queue further files: with the subscriber blocked (the
// feed paused) the file is rotated twice; once it runs again, the three
// generations arrive whole and in order, each under its own epoch.
func TestRotationsWhilePausedQueueInOrder(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, block: block, rotateWait: 5 * time.Second})
	appendTo(t, r.path, numbered("g0", 0, 2000)...)
	r.start()
	r.waitFor("the feed paused", 10*time.Second, r.pub.Paused)
	for k := 1; k <= 2; k++ {
		if err := os.Rename(r.path, fmt.Sprintf("%s.%d", r.path, k)); err != nil {
			t.Fatal(err)
		}
		appendTo(t, r.path, numbered(fmt.Sprintf("g%d", k), 0, 100)...)
		want := k
		r.waitFor("the new file queued", 10*time.Second, func() bool {
			return strings.Count(r.logs.String(), "queued behind the open one") == want
		})
	}
	close(block)
	gs := r.waitLines(2200)
	r.waitSettled()
	gs = r.rec.all()
	if len(gs) != 2200 {
		t.Fatalf("got %d lines, want 2200", len(gs))
	}
	epochs := map[uint64]bool{}
	for i, g := range gs {
		gen, n := 0, i
		if i >= 2000 {
			gen, n = 1+(i-2000)/100, (i-2000)%100
		}
		if want := fmt.Sprintf("g%d-%05d", gen, n); g.Line != want {
			t.Fatalf("line %d is %q, want %q", i, g.Line, want)
		}
		epochs[g.Epoch] = true
	}
	if len(epochs) != 3 {
		t.Fatalf("%d epochs, want 3", len(epochs))
	}
}

// The path's directory does not exist at start: WAITING_FOR_FILE, then the
// directory and the file appear and are picked up (the watch is added once
// the directory exists).
func TestDirectoryCreatedLater(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := base + "/later"
	r := newRig(t, base, rigOpts{strategy: file.Earliest})
	r.path = dir + "/app.log"
	r.start()
	r.waitFor("WAITING_FOR_FILE", 10*time.Second, func() bool { return r.src.State() == file.WaitingForFile })
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	appendTo(t, r.path, numbered("a", 0, 3)...)
	r.waitLines(3)
	appendTo(t, r.path, numbered("a", 3, 2)...)
	gs := r.waitLines(5)
	if strings.Join(lines(gs), ",") != strings.Join(numbered("a", 0, 5), ",") {
		t.Fatalf("lines %q", lines(gs))
	}
}

// A path that is a symlink (as in /var/log/containers) follows its target
// through a rename rotation of the target.
func TestSymlinkedPathFollowsRotation(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	target := base + "/real"
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	linkDir := base + "/links"
	if err := os.Mkdir(linkDir, 0o755); err != nil {
		t.Fatal(err)
	}
	appendTo(t, target+"/app.log", numbered("a", 0, 3)...)
	if err := os.Symlink(target+"/app.log", linkDir+"/app.log"); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, linkDir, rigOpts{strategy: file.Committed}).start()
	r.waitLines(3)
	appendTo(t, target+"/app.log", "a-00003")
	r.waitLines(4)
	if err := os.Rename(target+"/app.log", target+"/app.log.1"); err != nil {
		t.Fatal(err)
	}
	appendTo(t, target+"/app.log", numbered("b", 0, 2)...)
	gs := r.waitLines(6)
	r.waitSettled()
	if got := strings.Join(lines(gs), ","); got != "a-00000,a-00001,a-00002,a-00003,b-00000,b-00001" {
		t.Fatalf("lines %s", got)
	}
	if gs[4].Epoch == gs[3].Epoch {
		t.Fatal("no new epoch after the target's rotation")
	}
}

// TestEpochBarrierReportsPaused: while the new file's first line waits for
// every line of the old epoch to be acknowledged, the source reads nothing:
// the feed reports paused, with the barrier as the reason; once the
// barrier is crossed it no longer is.
func TestEpochBarrierReportsPaused(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	r := newRig(t, "", rigOpts{strategy: file.Committed, block: block})
	var unblock sync.Once
	open := func() { unblock.Do(func() { close(block) }) }
	appendTo(t, r.path, numbered("a", 0, 5)...)
	r.start()
	t.Cleanup(open) // before the rig's stop, which drains
	r.waitFor("the first file read", 10*time.Second, func() bool { return r.src.LinesRead() >= 5 })
	newFile := r.path + ".new"
	appendTo(t, newFile, numbered("b", 0, 3)...)
	bID := identity(t, newFile)
	if err := os.Rename(newFile, r.path); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the switch to the new file", 10*time.Second, func() bool {
		dev, ino, _ := r.src.FileIdentity()
		return [2]uint64{dev, ino} == bID
	})
	const why = "epoch switch waits for the previous file's lines"
	r.waitFor("paused at the barrier", 10*time.Second, func() bool {
		return r.pub.Paused() && r.pub.PauseReason() == why
	})
	if r.rec.len() != 0 || r.pub.Pending() == 0 {
		t.Fatalf("got %d lines, pending %d: the barrier should still wait", r.rec.len(), r.pub.Pending())
	}
	open()
	r.waitLines(8)
	r.waitSettled()
	if r.pub.Paused() {
		t.Fatalf("still paused (%q) after the barrier was crossed", r.pub.PauseReason())
	}
	if gs := r.rec.all(); gs[5].Line != "b-00000" || gs[5].Epoch == gs[0].Epoch {
		t.Fatalf("first line of the new file %+v", gs[5])
	}
}
