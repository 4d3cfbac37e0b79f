package file

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"tailfeed/feed"
	"tailfeed/overload"
	"tailfeed/pointer"
	"testing"
	"time"
)

// Review of session 4b (KeptNewKey commit at open, adoptCopies/copyName,
// genOwn/restartOrder, Source.Forgot).

// TestRevS5SameStemUnrelatedFileTakenForCutFilesCopy: glob "dir/*.log";
// app.log holds only its CSV header "time,level,msg" when it is committed
// (the fingerprint covers those 15 bytes); clean stop. While stopped
// a-0..a-2 are appended to app.log, logrotate copytruncate makes app.log.1
// (unmatched, beside the path: DESIGN §4's pointer's generation, "a file
// matching the fingerprint alone (a copy)"), a-3 goes to the cut app.log,
// and another application creates app-error.log with the same header and
// its lines e-0, e-1. copyName/sameStem take "app-error.log" for a name
// "after" app.log (stem "app" then '-'), so adoptCopies gives app.log's
// pointer to app-error.log: it is read from offset 15 (its header line
// skipped, uncounted) and app.log.1's a-0..a-2 are read by nobody and
// counted by nobody. README (this session): "A file of another name that
// merely shares the first bytes (a CSV header) is not taken for a copy";
// DESIGN §10 "any other new key is a new stream, read from its start"; §4
// "Nothing green over a loss". Observed: a-0..a-2 and app-error.log's
// header never delivered, lostTails 0. Expected: a-0..a-3 and all of
// app-error.log (header included) — or at least the loss counted.
func TestRevS5SameStemUnrelatedFileTakenForCutFilesCopy(t *testing.T) {
	t.Parallel()
	sharedHeaderCopytruncate(t, "app.log", "app-error.log", true)
}

const csvHeader = "time,level,msg\n"

// headerCommitted makes dir/name holding only a CSV header and has a first
// run of the glob "*.log" deliver and commit it (clean stop).
func headerCommitted(t *testing.T, name string) (dir, data, a string) {
	t.Helper()
	dir, data = t.TempDir(), t.TempDir()
	a = filepath.Join(dir, name)
	if err := os.WriteFile(a, []byte(csvHeader), 0o600); err != nil {
		t.Fatal(err)
	}
	firstRun(t, filepath.Join(dir, "*.log"), data, 1)
	return dir, data, a
}

// sharedHeaderCopytruncate: name's header committed; while stopped a-0..a-2
// appended, another file other (matched) made with the same header and
// e-0, e-1, logrotate copytruncate to name.1 (not matched) and a-3 to the
// cut file. The restart must read everything (name.1's tail from the
// pointer, other whole) — or, with orCounted, at least count the loss and
// read other whole.
func sharedHeaderCopytruncate(t *testing.T, name, other string, orCounted bool) {
	t.Helper()
	dir, data, a := headerCommitted(t, name)
	appendTo(t, a, numbered("a", 3))
	if err := os.WriteFile(filepath.Join(dir, other), []byte(csvHeader+numbered("e", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	copytruncateStopped(t, a, a+".1", "a-3\n")
	ig2, _ := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	got, _ := ig2.popEpochs(2500*time.Millisecond, true)
	sorted := append([]string(nil), got...)
	sort.Strings(sorted)
	want := "a-0,a-1,a-2,a-3,e-0,e-1,time,level,msg"
	tails, _, detail := ig2.lost()
	if all := strings.Join(sorted, ","); all != want && !(orCounted && tails > 0 && strings.Contains(all, "time,level,msg")) {
		t.Fatalf("copytruncate while stopped (copy %s.1 beside, unmatched) and a new %s with the same header: delivered %q, lostTails %d (%q); want each of %s",
			name, other, got, tails, detail, want)
	}
}

// TestRevS5SameStemUnrelatedFileHidesDeletedFilesLoss: glob "dir/*.log";
// app.log holds only its header when committed (fingerprint over 15
// bytes); clean stop. While stopped a-0..a-2 are appended to app.log and it
// is deleted; another application creates app-error.log with the same
// header and e-0, e-1. countGone's copy search (copyName: sameStem
// "app-error.log" ~ "app.log") takes app-error.log for app.log's copy and
// resets the pointer as "forgotten" with nothing counted — yet
// app-error.log holds none of a-0..a-2. README: "A file of another name
// that merely shares the first bytes (a CSV header) is not taken for a
// copy, so a cp to another name + rm while stopped counts the loss too";
// DESIGN §4 "Nothing green over a loss". Observed: lostTails 0 (lossless
// true over three lines gone). Expected: lostTails 1.
func TestRevS5SameStemUnrelatedFileHidesDeletedFilesLoss(t *testing.T) {
	t.Parallel()
	dir, data, a := headerCommitted(t, "app.log")
	appendTo(t, a, numbered("a", 3))
	if err := os.WriteFile(filepath.Join(dir, "app-error.log"), []byte(csvHeader+numbered("e", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	ig2, _ := runGlobQuiet(t, filepath.Join(dir, "*.log"), data, 200*time.Millisecond)
	got, _ := ig2.popEpochs(2*time.Second, true)
	if tails, _, detail := ig2.lost(); tails != 1 {
		t.Fatalf("app.log (3 unread lines) deleted while stopped, an unrelated app-error.log shares its header: delivered %q, lostTails %d (%q); want lostTails 1",
			got, tails, detail)
	}
}

// runSingle runs a COMMITTED single-file source over in with pointer p; it
// returns the queue, the publisher, the source and a stop func.
func runSingle(t *testing.T, in string, p *pointer.Pointer) (*feed.Queue, *feed.Publisher, *Source, func()) {
	t.Helper()
	q := feed.NewQueue("rec", 256, 1<<20, overload.Policy{Kind: overload.Pause})
	pub := feed.NewPublisher("app", []*feed.Queue{q}, 4096, 64)
	src := New(Config{Feed: "app", Path: in, Strategy: Committed, MaxLine: 1 << 16, BatchLines: 64, BatchBytes: 1 << 20,
		Poll: 20 * time.Millisecond, RotateWait: 100 * time.Millisecond, CommitSync: 5 * time.Millisecond, Pointer: p, NoNotify: true}, pub)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()
	var once atomic.Bool
	stop := func() {
		if once.CompareAndSwap(false, true) {
			cancel()
			<-done
			p.Close()
		}
	}
	t.Cleanup(stop)
	return q, pub, src, stop
}

func popAck(q *feed.Queue, pub *feed.Publisher) int {
	n := 0
	if b := q.TryPop(); b != nil {
		n = b.Len()
		q.AddDispatched(uint64(n))
		b.Release()
		pub.Poke()
	}
	return n
}

func waitFor5(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestRevS5KeptNewKeyCommitFailureNeverRetried: a COMMITTED single-file
// feed; app.log's a-0..a-2 committed; clean stop. While stopped app.log is
// replaced by a rename into place of the same bytes (a new file key, same
// content: §3's KeptNewKey). At the restart checkPointer commits the same
// offset under the new key at once; that commit's msync fails (EIO; on
// Linux the pages are left clean). The disk heals; nothing new is
// appended. DESIGN §3: a failed msync "is counted in commitFailures, is
// never 'retried alone': the next commit rewrites the whole slot and syncs
// again"; §7 settled needs "the last commit succeeded, is synced". With no
// line to acknowledge there is no next commit: commitOK stays false for
// good (the feed never settles, and a clean stop reports "final pointer
// commit failed") and the pointer file keeps naming the old key. Observed:
// CommitOK false and the on-disk record's file key the old one, seconds
// after the disk healed. Expected: the new key committed and synced, the
// feed settled.
func TestRevS5KeptNewKeyCommitFailureNeverRetried(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "app.log")
	ptrPath := filepath.Join(dir, "app.ptr")
	body := numbered("a", 3)
	if err := os.WriteFile(in, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := pointer.Open(ptrPath, pointer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, pub, src, stop := runSingle(t, in, p)
	n := 0
	waitFor5(t, "a-0..a-2", 5*time.Second, func() bool { n += popAck(q, pub); return n == 3 })
	waitFor5(t, "their commit on disk", 5*time.Second, func() bool {
		rec, err := pointer.Inspect(ptrPath)
		return err == nil && rec.Offset == int64(len(body)) && src.CommitOK()
	})
	stop()
	// Rename into place: the same bytes under a new inode.
	tmp := in + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, in); err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(in, &st); err != nil {
		t.Fatal(err)
	}
	key := pointer.FileKey(uint64(st.Dev), st.Ino)
	var failing atomic.Bool
	p2, err := pointer.Open(ptrPath, pointer.Options{Map: func(f *os.File) (pointer.Mapping, error) {
		buf := make([]byte, pointer.Size)
		if _, err := f.ReadAt(buf, 0); err != nil {
			return nil, err
		}
		return &cleanAfterErrorMapping{f: f, buf: buf, clean: append([]byte(nil), buf...), failing: &failing}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	failing.Store(true) // from the source's first commit on
	_, _, src2, _ := runSingle(t, in, p2)
	waitFor5(t, "the failed commit of the new key", 5*time.Second, func() bool { return src2.CommitFailures() > 0 })
	failing.Store(false)
	time.Sleep(2 * time.Second) // a hundred poll cycles
	rec, err := pointer.Inspect(ptrPath)
	if !src2.CommitOK() || err != nil || rec.FileKey != key {
		t.Fatalf("2 s after the disk healed: CommitOK %v, on-disk record %+v (%v); want CommitOK true and the new file key %016x on disk",
			src2.CommitOK(), rec, err, key)
	}
}

// TestRevS5NewFileAtPathSharingHeaderHidesGoneFilesLoss: glob
// "dir/*.log"; app.log holds only its CSV header when committed
// (fingerprint over those 15 bytes); clean stop. While stopped a-0..a-2
// are appended to app.log, then it is deleted and the application creates
// a new app.log, header first, then n-0, n-1. copyMade (copyName(first,
// path) holds for the path itself) takes the new app.log for the gone
// file's copy: adoptByPath does not give it the pointer and countGone
// resets the pointer as "forgotten", counting nothing — yet the new file
// holds none of a-0..a-2. README (this session): "Except when a file new
// at that start sits at the path the pointer's stream was first matched
// under: that file's stream takes the pointer and ... looks beside the
// path for the pointer's file ...; not found there, it counts lostTails 1";
// DESIGN §4 "Nothing green over a loss". Observed: lostTails 0. Expected:
// lostTails 1, and the new app.log read whole (header, n-0, n-1).
func TestRevS5NewFileAtPathSharingHeaderHidesGoneFilesLoss(t *testing.T) {
	t.Parallel()
	dir, data, a := headerCommitted(t, "app.log")
	pattern := filepath.Join(dir, "*.log")
	hdr := csvHeader
	appendTo(t, a, numbered("a", 3))
	// The new file is made before the old one goes, so it cannot reuse its
	// inode (a reused key with the same first bytes is the case identity
	// cannot tell, README; a placeholder made after the removal did not
	// always prevent it), then renamed to the path.
	tmp := filepath.Join(dir, "new.tmp")
	if err := os.WriteFile(tmp, []byte(hdr+numbered("n", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, a); err != nil {
		t.Fatal(err)
	}
	ig2, _ := runGlobQuiet(t, pattern, data, 200*time.Millisecond)
	got, _ := ig2.popEpochs(2*time.Second, true)
	tails, _, detail := ig2.lost()
	if tails != 1 || strings.Join(got, ",") != "time,level,msg,n-0,n-1" {
		t.Fatalf("app.log (3 unread lines) deleted while stopped, a new app.log with the same header: delivered %q, lostTails %d (%q); want time,level,msg,n-0,n-1 and lostTails 1",
			got, tails, detail)
	}
}

// TestRevS5AdoptedSourceReadsGlobMatchedCopyOfAnotherName: glob
// "dir/*.log"; app.log's a-0..a-4 committed; clean stop. While stopped a-5
// is appended, the operator copies app.log to backup.log (matched by the
// glob, a name not "after" app.log: copyName false), deletes app.log, and
// the application creates a new app.log (n-0, n-1). copyMade no longer
// sees backup.log, so adoptByPath gives the gone file's pointer to the new
// app.log's stream; that source's findCopy looks for a copy by first bytes
// in the whole directory, with no regard to names or to GlobMatched, and
// reads backup.log from the pointer's offset — while backup.log's own
// stream reads it from its start. DESIGN §2 (after a clean stop nothing is
// delivered again); README (this session): a file of another name sharing
// the first bytes "is not taken for a copy" (backup.log is a new stream,
// read from its start, and the gone file's tail counted). Observed: a-5
// delivered twice in the same run. Expected: a-5 once (with a-0..a-4 from
// backup.log's own stream, n-0, n-1).
func TestRevS5AdoptedSourceReadsGlobMatchedCopyOfAnotherName(t *testing.T) {
	t.Parallel()
	dir, data := t.TempDir(), t.TempDir()
	a := filepath.Join(dir, "app.log")
	if err := os.WriteFile(a, []byte(numbered("a", 5)), 0o600); err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(dir, "*.log")
	firstRun(t, pattern, data, 5)
	appendTo(t, a, "a-5\n")
	b, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "backup.log"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte(numbered("n", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, _ := runGlobQuiet(t, pattern, data, 200*time.Millisecond)
	got, _ := ig2.popEpochs(2500*time.Millisecond, true)
	n := 0
	for _, l := range got {
		if l == "a-5" {
			n++
		}
	}
	if tails, _, detail := ig2.lost(); n != 1 {
		t.Fatalf("cp app.log backup.log + rm + new app.log while stopped: delivered %q (a-5 %d times), lostTails %d (%q); want a-5 once",
			got, n, tails, detail)
	}
}

// TestRevS5GenOwnSourceRestartedReadsMatchedGenerationAgain: glob
// "dir/a.log*" with exclude "dir/a.log.2", maxOpenFiles 1. a.log's
// a-0..a-4 committed; clean stop. While stopped 40,000 more lines are
// appended to a.log and logrotate runs twice (a.log -> a.log.1 -> a.log.2,
// excluded; b-0..b-2 end up in a.log.1, matched; c-0, c-1 in a.log).
// Another matched file, a.logz, keeps growing. At the restart a.log's
// stream takes the gone file's pointer with genOwn, so its first source
// leaves a.log.1 to the glob (Config.GlobMatched). That first source is
// preempted (a.logz waits for the only slot) while still in a.log.2's long
// tail; the stream's next source is started without GlobMatched (start
// clears genOwn), finds the pointer's file again and queues every later
// generation beside the path — a.log.1 included, already read by its own
// stream. DESIGN §2 (no duplicate after a clean stop), README (this
// session) "the new file's stream does not read them again". Expected:
// b-0..b-2 once each.
func TestRevS5GenOwnSourceRestartedReadsMatchedGenerationAgain(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 5))
	z := filepath.Join(dir, "a.logz")
	if err := os.WriteFile(z, []byte(numbered("z", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	pattern := filepath.Join(dir, "a.log*")
	set := func(c *GlobConfig) {
		c.Exclude = []string{filepath.Join(dir, "a.log.2")}
		c.MaxOpenFiles = 1
		c.Stream.BatchLines = 16
	}
	ig, stop := runGlobCfg(t, pattern, data, 200*time.Millisecond, set)
	if first, _ := ig.popEpochs(1500*time.Millisecond, true); len(first) != 8 {
		t.Fatalf("first run delivered %d lines, want 8", len(first))
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	var tail strings.Builder
	for i := 5; i < 40005; i++ {
		tail.WriteString("a-")
		tail.WriteString(itoa(i))
		tail.WriteString("\n")
	}
	appendTo(t, a, tail.String())
	one, two := a+".1", a+".2"
	if err := os.Rename(a, one); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte(numbered("b", 3)), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := os.Rename(one, two); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(a, one); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a, []byte(numbered("c", 2)), 0o600); err != nil {
		t.Fatal(err)
	}
	ig2, _ := runGlobCfg(t, pattern, data, 200*time.Millisecond, set)
	stopZ := make(chan struct{})
	zdone := make(chan struct{})
	go func() {
		defer close(zdone)
		for i := 3; ; i++ {
			select {
			case <-stopZ:
				return
			case <-time.After(30 * time.Millisecond):
			}
			f, err := os.OpenFile(z, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return
			}
			f.WriteString("z-" + itoa(i) + "\n")
			f.Close()
		}
	}()
	counts := map[string]int{}
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); {
		b := ig2.q.TryPop()
		if b == nil {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		for _, l := range b.Lines {
			counts[string(l)]++
		}
		ig2.q.AddDispatched(uint64(b.Len()))
		b.Release()
		ig2.pub.Poke()
		time.Sleep(time.Millisecond)
	}
	close(stopZ)
	<-zdone
	if counts["b-0"] != 1 || counts["b-2"] != 1 || counts["c-1"] != 1 || counts["a-40004"] != 1 {
		t.Fatalf("b-0 %d, b-2 %d times, c-1 %d, a-40004 %d; want each once", counts["b-0"], counts["b-2"], counts["c-1"], counts["a-40004"])
	}
}

func itoa(i int) string {
	const d = "0123456789"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{d[i%10]}, b...)
	}
	return string(b)
}

// TestRevS5CopyOfRenamedFileOrderedAfterCutFile: glob "dir/*.log";
// a.log's a-0..a-4 committed, then a.log is renamed to b.log while running
// (a rename within the glob keeps its stream, first matched as a.log);
// clean stop. While stopped a-5 is appended to b.log, logrotate
// copytruncate copies it to b-1.log (matched) and cuts it, and n-0 is
// written to the cut b.log. adoptCopies gives the pointer to b-1.log and
// its stream the first path a.log; restartOrder then chains the copy
// before whatever is at a.log, not before the cut b.log, so n-0 (written
// at b.log after a-5) is published beside a-5 with no barrier. DESIGN §10
// "Order": "a new file at a path is published after every line of the file
// previously at that path is acknowledged" (here the cut file's new
// content after the copy's tail, as TestRevLead3CopytruncateWhileStopped
// CopyInGlobReadFromStart holds for an unrenamed file). Expected: a-5 then
// n-0.
func TestRevS5CopyOfRenamedFileOrderedAfterCutFile(t *testing.T) {
	t.Parallel()
	dir, data, a := aLogIn(t, numbered("a", 5))
	pattern := filepath.Join(dir, "*.log")
	ig, stop := runGlobQuiet(t, pattern, data, 200*time.Millisecond)
	if first, _ := ig.popEpochs(time.Second, true); len(first) != 5 {
		t.Fatalf("first run delivered %d lines, want 5", len(first))
	}
	b := filepath.Join(dir, "b.log")
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if again, _ := ig.popEpochs(time.Second, true); len(again) != 0 {
		t.Fatalf("the rename within the glob delivered %q", again)
	}
	stop()
	appendTo(t, b, "a-5\n")
	copytruncateStopped(t, b, filepath.Join(dir, "b-1.log"), "n-0\n")
	ig2, _ := runGlobQuiet(t, pattern, data, 200*time.Millisecond)
	// Nothing acknowledged: n-0 must wait for a-5.
	got, _ := ig2.popEpochs(2*time.Second, false)
	tails, _, detail := ig2.lost()
	if strings.Join(got, ",") != "a-5" || tails != 0 {
		t.Fatalf("copytruncate while stopped of a file renamed within the glob, nothing acknowledged: delivered %q, lostTails %d (%q); want a-5 alone (n-0 behind the barrier), 0",
			got, tails, detail)
	}
}
