package e2e

// Rotation and truncation cases of other log shippers' test suites, run as
// black-box tests of the built binary. Each test names the case it ports
// (project, suite, test); the facts carry over (what is done to the file,
// what the consumer must then have delivered), the code does not. Where a
// peer only asks "delivered", tailfeed is also held to DESIGN §4: each
// line exactly once after clean stops, settled with the pointer at the end
// of the file at the path, `lossless: true` and `tailfeed status` exit 0.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"tailfeed/internal/testutil"
)

// peerConfig: one COMMITTED feed on logs/app.log (or what the test puts
// there) with a file sink; %d: pollIntervalMillis, rotateWaitMillis.
const peerConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./logs/app.log
    readStrategy: COMMITTED
    pollIntervalMillis: %d
    rotateWaitMillis: %d
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
    fsync: never
`

// peer is one peer case's directory: logs/app.log tailed into out.log.
type peer struct {
	t   *testing.T
	e   *env
	app string
	out string
	env []string // extra environment of every daemon run
}

func newPeer(t *testing.T, pollMillis, rotateWaitMillis int, extraEnv ...string) *peer {
	t.Helper()
	e := newEnv(t, fmt.Sprintf(peerConfig, pollMillis, rotateWaitMillis))
	if err := os.Mkdir(e.path("logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &peer{t: t, e: e, app: e.path("logs/app.log"), out: e.path("out.log"), env: extraEnv}
}

// log returns name inside logs/.
func (p *peer) log(name string) string { return filepath.Join(filepath.Dir(p.app), name) }

// start starts a daemon (with p.env) and waits until it answers.
func (p *peer) start() *daemon {
	p.t.Helper()
	for attempt := 0; ; attempt++ {
		d := p.e.spawnIn(p.e.dir, p.env...)
		err := d.waitReady(60 * time.Second)
		if err == nil {
			return d
		}
		if d.exited() && strings.Contains(d.log(), "address already in use") && attempt < 5 {
			continue
		}
		p.t.Fatalf("daemon did not become ready: %v\n%s", err, tail(d.log(), 4000))
	}
}

func rename(t testing.TB, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// expectOut waits until the output holds as many lines as want, then
// requires exactly the lines of want, each once (in any order), and no
// more 300 ms later. A mismatch is an error, not the end of the test: the
// status checks that follow still say whether a loss was counted.
func (p *peer) expectOut(want ...string) {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for countLines(p.t, p.out, 0) < len(want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	data, _ := os.ReadFile(p.out)
	got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(data) == 0 {
		got = nil
	}
	g, w := append([]string(nil), got...), append([]string(nil), want...)
	sort.Strings(g)
	sort.Strings(w)
	if strings.Join(g, "\n") != strings.Join(w, "\n") {
		p.t.Errorf("output lines %s, want each of %s exactly once", short(got), short(want))
	}
}

// short quotes lines, eliding long ones.
func short(lines []string) string {
	q := make([]string, len(lines))
	for i, l := range lines {
		if len(l) > 24 {
			l = fmt.Sprintf("%s…(%d bytes)", l[:12], len(l))
		}
		q[i] = fmt.Sprintf("%q", l)
	}
	return "[" + strings.Join(q, " ") + "]"
}

// whole requires the feed settled with the pointer at the end of the file
// at the path, lossless, and `tailfeed status` exit 0.
func (p *peer) whole(d *daemon) feedReport {
	p.t.Helper()
	r, ok := settleAtPath(d, p.app, p.out, 15*time.Second)
	if !ok {
		b, _ := json.Marshal(r)
		p.t.Fatalf("not settled with the pointer at the end of %s within 15s; last report %s", p.app, b)
	}
	f := r.Feeds[0]
	if !f.Lossless || f.LostTails != 0 || f.LostBytes != 0 || f.Dropped != 0 {
		p.t.Errorf("lossless %v lostTails %d lostBytes %d dropped %d; want true, 0, 0, 0: nothing was lost", f.Lossless, f.LostTails, f.LostBytes, f.Dropped)
	}
	if code, stderr := statusExit(p.t, d, 5*time.Second); code != 0 {
		p.t.Errorf("tailfeed status: exit %d, want 0 (settled, lossless): %s", code, stderr)
	}
	return f
}

// numbered returns lines "<prefix>-<i>" for i in [from, to].
func numbered(prefix string, from, to int) []string {
	return testutil.Numbered(prefix+"-%d", from, max(0, to-from+1))
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestPeerMoveCreateWriteBoth ports Vector's test harness case
// file_rotate_create_correctness (vectordotdev/vector-test-harness): the
// file is renamed as logrotate `create` does, a new empty file takes its
// place, and one new line is written to each; both must arrive, nothing
// twice. The line written to the renamed file after the switch is the
// `downgraded` one (DESIGN §4).
func TestPeerMoveCreateWriteBoth(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 250, 5000)
	appendTo(t, p.app, "a-1\na-2\na-3\n")
	d := p.start()
	p.expectOut("a-1", "a-2", "a-3")
	rename(t, p.app, p.log("app.log.1"))
	appendTo(t, p.app, "")
	appendTo(t, p.log("app.log.1"), "old-after-rename\n")
	appendTo(t, p.app, "new-1\n")
	p.expectOut("a-1", "a-2", "a-3", "old-after-rename", "new-1")
	p.whole(d)
	d.stop()
}

// rotateSequential shifts app.log.N to app.log.N+1 (highest first), then
// renames app.log to app.log.1 and creates an empty app.log (copy: copies
// app.log to app.log.1 and truncates it in place instead).
func (p *peer) rotateSequential(keep int, copyTruncate bool) {
	p.t.Helper()
	for n := keep - 1; n >= 1; n-- {
		if _, err := os.Stat(p.log(fmt.Sprintf("app.log.%d", n))); err == nil {
			rename(p.t, p.log(fmt.Sprintf("app.log.%d", n)), p.log(fmt.Sprintf("app.log.%d", n+1)))
		}
	}
	if !copyTruncate {
		rename(p.t, p.app, p.log("app.log.1"))
		appendTo(p.t, p.app, "")
		return
	}
	data, err := os.ReadFile(p.app)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(p.log("app.log.1"), data, 0o644); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Truncate(p.app, 0); err != nil {
		p.t.Fatal(err)
	}
}

// rotatingWriter writes numbered lines while rotating every interval,
// rotations times, the writer quiet during each rotation; it returns the
// tally once the feed is whole.
func (p *peer) rotatingWriter(d *daemon, rotations int, every time.Duration, copyTruncate bool) tally {
	p.t.Helper()
	appendTo(p.t, p.app, "")
	w := startWriter(p.t, p.app, 2*time.Millisecond)
	for range rotations {
		time.Sleep(every)
		w.quiet(func() { p.rotateSequential(5, copyTruncate) })
	}
	time.Sleep(every)
	written := w.finish()
	p.whole(d)
	tl := countNumbered(p.t, p.out, written)
	if len(tl.missing) > 0 || tl.duplicated > 0 || len(tl.foreign) > 0 {
		p.t.Errorf("%d lines written, %d delivered; missing %s, %d duplicated, %d foreign", written, tl.delivered, ranges(tl.missing), tl.duplicated, len(tl.foreign))
	}
	p.t.Logf("%d lines written across %d rotations, %d delivered, %d missing, %d duplicated", written, rotations, tl.delivered, len(tl.missing), tl.duplicated)
	return tl
}

// TestPeerRotationMoveCreateSequential ports the OpenTelemetry collector's
// fileconsumer TestRotation "NoDeletion/MoveCreateSequential" and
// TestMultiFileRotateSlow (pkg/stanza/fileconsumer/rotation_test.go): a
// logger writing lines with small pauses renames its file to app.log.1
// (shifting older generations up, none deleted) and starts a new one,
// several times, while the consumer runs: every line exactly once.
func TestPeerRotationMoveCreateSequential(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 250, 5000)
	d := p.start()
	p.rotatingWriter(d, 3, 250*time.Millisecond, false)
	d.stop()
}

// TestPeerRotationCopyTruncateSequential ports the OpenTelemetry
// collector's fileconsumer TestRotation "NoDeletion/CopyTruncateSequential"
// and TestMultiCopyTruncateSlow: the same logger rotates by copying its
// file to app.log.1 and truncating it in place. The writer is quiet from
// the copy to the truncate (outside that window copytruncate loses
// nothing), so every line must arrive exactly once.
func TestPeerRotationCopyTruncateSequential(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 250, 5000)
	d := p.start()
	p.rotatingWriter(d, 3, 250*time.Millisecond, true)
	d.stop()
}

// TestPeerMoveFile ports the OpenTelemetry collector's fileconsumer
// TestMoveFile: a file already read is renamed away and nothing takes its
// place: no line is delivered again. tailfeed then closes it after
// rotateWaitMillis (WAITING_FOR_FILE, settled, lossless) and reads a file
// created at the path later from its start.
func TestPeerMoveFile(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 100, 300)
	appendTo(t, p.app, "testlog1\n")
	// A quiet log, last written a while ago: outside the 2 s mtime slack
	// within which DESIGN §4 lets a generation scan take a file for a
	// later generation (and read it again: a duplicate, never a gap).
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(p.app, old, old); err != nil {
		t.Fatal(err)
	}
	d := p.start()
	p.expectOut("testlog1")
	rename(t, p.app, p.log("app.log.2"))
	r := d.waitFor("WAITING_FOR_FILE, settled", 15*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].State == "WAITING_FOR_FILE"
	})
	p.expectOut("testlog1")
	if f := r.Feeds[0]; !f.Lossless {
		t.Errorf("a file read to its end and renamed away: lossless false (lostTails %d); nothing was lost", f.LostTails)
	}
	appendTo(t, p.app, "testlog2\n")
	p.expectOut("testlog1", "testlog2")
	p.whole(d)
	d.stop()
}

// TestPeerTrackMovedAwayFiles ports the OpenTelemetry collector's
// fileconsumer TestTrackMovedAwayFiles: the file is moved to another
// directory and the application appends to it there; that line is still
// delivered (the open file is read to its end for rotateWaitMillis).
func TestPeerTrackMovedAwayFiles(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 250, 5000)
	appendTo(t, p.app, "testlog1\n")
	d := p.start()
	p.expectOut("testlog1")
	moved := p.e.path("moved")
	if err := os.Mkdir(moved, 0o755); err != nil {
		t.Fatal(err)
	}
	rename(t, p.app, filepath.Join(moved, "newfile.log"))
	appendTo(t, filepath.Join(moved, "newfile.log"), "testlog2\n")
	p.expectOut("testlog1", "testlog2")
	r, _ := d.status()
	if f := r.Feeds[0]; !f.Lossless {
		t.Errorf("lossless false after a move-away (lostTails %d lostBytes %d); nothing was lost", f.LostTails, f.LostBytes)
	}
	d.stop()
}

// TestPeerTruncateThenWrite ports the OpenTelemetry collector's
// fileconsumer TestTruncateThenWrite: the application truncates its own
// file through its descriptor and writes on: the new line is delivered,
// the old ones not again, under a new epoch. Nothing unread was cut, so
// the feed stays lossless.
func TestPeerTruncateThenWrite(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 250, 5000)
	f, err := os.OpenFile(p.app, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("testlog1\ntestlog2\n")
	d := p.start()
	p.expectOut("testlog1", "testlog2")
	r0, _ := d.status()
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	f.Seek(0, io.SeekStart)
	f.WriteString("testlog3\n")
	p.expectOut("testlog1", "testlog2", "testlog3")
	fr := p.whole(d)
	if fr.Epoch == r0.Feeds[0].Epoch {
		t.Errorf("epoch %s kept across a truncation; the truncated file is read under a new epoch", fr.Epoch)
	}
	d.stop()
}

// TestPeerCopyTruncateWriteBothAcrossRestart ports the OpenTelemetry
// collector's fileconsumer TestCopyTruncateWriteBoth to a stopped daemon:
// the file is copied (to app.log.1), truncated, and then one line is
// written to the copy and one to the truncated file. At the restart the
// pointer's generation is the copy (its first bytes match the
// fingerprint): it is read from the offset (the line written to it), then
// the truncated file from its start (DESIGN §4 "Restart after rotation").
// Nothing is lost: a copy was found.
func TestPeerCopyTruncateWriteBothAcrossRestart(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 250, 5000)
	appendTo(t, p.app, "testlog1\ntestlog2\n")
	d := p.start()
	p.expectOut("testlog1", "testlog2")
	d.stop()
	data, err := os.ReadFile(p.app)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p.log("app.log.1"), data, 0o644)
	if err := os.Truncate(p.app, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, p.log("app.log.1"), "testlog3\n")
	appendTo(t, p.app, "testlog4\n")
	d = p.start()
	p.expectOut("testlog1", "testlog2", "testlog3", "testlog4")
	p.whole(d)
	d.stop()
}

// TestPeerFileMovedWhileOffBigFiles ports the OpenTelemetry collector's
// fileconsumer TestFileMovedWhileOff_BigFiles: lines longer than the
// fingerprint (5,000 bytes here; tailfeed fingerprints 4 KiB), the file
// renamed while the consumer is stopped and a new one written at the path:
// after the restart the new line arrives and the old one is not repeated.
func TestPeerFileMovedWhileOffBigFiles(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 250, 5000)
	log1, log2 := "log1-"+strings.Repeat("a", 5000), "log2-"+strings.Repeat("b", 5000)
	appendTo(t, p.app, log1+"\n")
	d := p.start()
	p.expectOut(log1)
	d.stop()
	rename(t, p.app, p.log("app.log.1"))
	appendTo(t, p.app, log2+"\n")
	d = p.start()
	p.expectOut(log1, log2)
	p.whole(d)
	d.stop()
}

// TestPeerRotationsBetweenTwoLooks ports the OpenTelemetry collector's
// fileconsumer TestMultiFileRotate (rotations back to back, faster than
// the consumer polls) with fsnotify off and a 2 s poll: three rename
// rotations land between two looks, each generation holding lines. DESIGN
// §4 "While running, too": the path names a file that is not the one
// expected next, so the later-generation scan queues app.log.2 and
// app.log.1 before the file at the path; every line once.
func TestPeerRotationsBetweenTwoLooks(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 2000, 5000, "TAILFEED_NO_FSNOTIFY=1")
	appendTo(t, p.app, joinLines(numbered("g0", 1, 3)))
	d := p.start()
	want := numbered("g0", 1, 3)
	p.expectOut(want...)
	appendTo(t, p.app, joinLines(numbered("g0", 4, 5))) // unread when rotated
	want = append(want, numbered("g0", 4, 5)...)
	for g := 1; g <= 3; g++ {
		p.rotateSequential(5, false)
		lines := numbered(fmt.Sprintf("g%d", g), 1, 3)
		appendTo(t, p.app, joinLines(lines))
		want = append(want, lines...)
	}
	p.expectOut(want...)
	p.whole(d)
	d.stop()
}

// TestPeerSymlinkTargetRotatedWhileStopped ports Fluent Bit's in_tail
// test_rotate_link (tests/runtime_shell/in_tail: "a monitored link, upon
// rotation, keeps the proper offset for the real file") to the layout
// container runtimes use: the configured path is a symlink to the real
// file, and the real file is rotated (renamed to current.log.1 beside it,
// a new current.log created) while tailfeed is stopped, with an unread
// tail. DESIGN §4 "Symlinks": generations are looked for beside the final
// target under the target's base name.
func TestPeerSymlinkTargetRotatedWhileStopped(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 250, 5000)
	data := p.e.path("data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	cur := filepath.Join(data, "current.log")
	appendTo(t, cur, "s-1\ns-2\n")
	if err := os.Symlink(cur, p.app); err != nil {
		t.Fatal(err)
	}
	d := p.start()
	p.expectOut("s-1", "s-2")
	d.stop()
	appendTo(t, cur, "s-3\n") // unread
	rename(t, cur, cur+".1")
	appendTo(t, cur, "s-4\n")
	d = p.start()
	p.expectOut("s-1", "s-2", "s-3", "s-4")
	p.whole(d)
	d.stop()
}

// TestPeerSymlinkTruncateAndRetarget ports Fluent Bit's in_tail
// test_truncate_link ("a link that gets a truncation": the lines written
// after the truncation are read from the new start) and then retargets
// the link, as kubelet and Docker do with a container's log link: a
// retarget is a rotation (DESIGN §4 "Symlinks"), the old target read to
// its end, the new one from its start.
func TestPeerSymlinkTruncateAndRetarget(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 250, 5000)
	data := p.e.path("data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	first, second := filepath.Join(data, "0.log"), filepath.Join(data, "1.log")
	appendTo(t, first, "t-1\nt-2\n")
	if err := os.Symlink(first, p.app); err != nil {
		t.Fatal(err)
	}
	d := p.start()
	p.expectOut("t-1", "t-2")
	if err := os.Truncate(first, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, first, "t-3\n")
	p.expectOut("t-1", "t-2", "t-3")
	// Retarget: the new target appears, the old one gets a last line, the
	// link is replaced atomically.
	appendTo(t, second, "u-1\n")
	appendTo(t, first, "t-4\n")
	tmp := p.log("app.log.tmp")
	if err := os.Symlink(second, tmp); err != nil {
		t.Fatal(err)
	}
	rename(t, tmp, p.app)
	appendTo(t, second, "u-2\n")
	p.expectOut("t-1", "t-2", "t-3", "t-4", "u-1", "u-2")
	p.whole(d)
	d.stop()
}

// TestPeerRestartRotatedGzip ports Vector's file source tests
// file_start_position_server_restart_with_file_rotation and
// test_gzipped_file (src/sources/file.rs): the file is rotated while the
// consumer is stopped, with lines it has not read, and the rotated file is
// then compressed (logrotate `compress` without delaycompress: app.log.1
// becomes app.log.1.gz). After the restart the unread lines are read from
// the .gz (DESIGN §4: positions of the decompressed bytes), then the new
// file; nothing twice, nothing lost.
func TestPeerRestartRotatedGzip(t *testing.T) {
	t.Parallel()
	p := newPeer(t, 250, 5000)
	appendTo(t, p.app, joinLines(numbered("z", 1, 3)))
	d := p.start()
	p.expectOut(numbered("z", 1, 3)...)
	d.stop()
	appendTo(t, p.app, joinLines(numbered("z", 4, 6))) // unread
	rename(t, p.app, p.log("app.log.1"))
	appendTo(t, p.app, "after-1\n")
	gzipFile(t, p.log("app.log.1"))
	d = p.start()
	p.expectOut(append(numbered("z", 1, 6), "after-1")...)
	p.whole(d)
	d.stop()
}

// gzipFile replaces path with path.gz (its mtime kept, as gzip and
// logrotate do).
func gzipFile(t testing.TB, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".gz", b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path+".gz", st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}
