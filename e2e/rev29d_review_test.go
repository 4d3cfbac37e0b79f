package e2e

import (
	"os"
	"testing"
	"time"
)

// Review 29d of the headGrow / adoptCopies (copyNamed at offset 0) /
// uncommitted-cut changes.

// TestRev29DXCustomRotatedNamesOtherAppTakesPointer — DESIGN §10 "At a
// start, a new key whose first bytes match a stream whose file is now
// shorter than its offset is that stream's copy at once; any other new key
// is a new stream." The offset-0 guard added to adoptCopies
// (source/file/glob.go:5089) takes a file as the cut file's copy when
// copyNamed (glob.go:5177) says logrotate names it so. With a custom
// rotatedNames (here "*-[0-9]*.log", dateext keeping the extension),
// copyNamed only asks isRotatedName && sameStem, and sameStem
// (glob.go:1238) takes the stem before the FIRST dot ("app") followed by
// any of ".-_": app-api-20261206.log — another application's dated file,
// not a name logrotate gives app.log's copies (those are
// app-<date>.log) — is taken for app.log's copy. copyName's own comment:
// "another application's file sharing the header (app-error.log) is not
// taken". Scenario (as review 29c's, but with a custom rotatedNames):
// app.log gets a two-line CSV header (published, never acknowledged: the
// pull consumer does not ack, offset 0 + first bytes), kill -9,
// logrotate copytruncate+compress cuts app.log (copy app.log.1.gz outside
// the glob), app-api-20261206.log appears with the same header.
//
// Observed (expected to fail): app-api-20261206.log is read from 0 under
// app.log's epoch, its header lines get the (epoch, position) that named
// app.log's, and the exactlyOnce sink skips them: once.log holds each
// header line once. Expected: a new stream (new epoch), once.log holds
// each twice, as plain.log does.
func TestRev29DXCustomRotatedNamesOtherAppTakesPointer(t *testing.T) {
	t.Parallel()
	const header = "ts,level,msg\n#schema 1\n"
	r := rev29BNewWith(t, "    rotatedNames: [\"*-[0-9]*.log\"]\n")
	r.create("app.log")
	d := r.e.start()
	d.waitFor("app.log tracked", 30*time.Second, func(rep *report) bool { return rep.Settled })
	appendTo(t, r.e.path("logs/app.log"), header)
	r.waitOut("once.log", []string{"ts,level,msg", "#schema 1"})
	for _, p := range r.pointers() {
		t.Logf("before the kill: pointer offset %d fpLen %d commits %d", p.Offset, p.FingerprintLength, p.Commits)
	}
	d.kill()
	r.logrotate("app.log", "copytruncate\ncompress\nrotate 1")
	other := "app-api-20261206.log"
	appendTo(t, r.e.path("logs/"+other), header)
	bl := r.write(other, "b", 3)
	d2 := r.e.start()
	r.waitOut("plain.log", bl)
	r.waitOut("once.log", bl)
	rep := d2.waitFor("settled", 30*time.Second, func(rep *report) bool { return rep.feed(t, "app").Sequence >= 5 || rep.Settled })
	f := rep.feed(t, "app")
	plain, once := r.lines("plain.log"), r.lines("once.log")
	t.Logf("plain header lines %d/%d, once header lines %d/%d; lostTails %d lossless %v; log: %s", plain["ts,level,msg"], plain["#schema 1"],
		once["ts,level,msg"], once["#schema 1"], f.LostTails, f.Lossless, rev29CGrep(d2.log(), "copied and cut"))
	for _, h := range []string{"ts,level,msg", "#schema 1"} {
		if once[h] < 2 {
			t.Errorf("once.log holds %q %d times, want 2 (app.log's and %s's): %s's header was read under app.log's epoch and skipped as applied", h, once[h], other, other)
		}
	}
}

// TestRev29DOKDefaultNamesOtherAppNotTaken — control for the finding above:
// with the default rotatedNames, app-api-20261206.log is a new stream
// (its header read under a new epoch: once.log holds it twice).
func TestRev29DOKDefaultNamesOtherAppNotTaken(t *testing.T) {
	t.Parallel()
	const header = "ts,level,msg\n#schema 1\n"
	r := rev29BNew(t)
	r.create("app.log")
	d := r.e.start()
	d.waitFor("app.log tracked", 30*time.Second, func(rep *report) bool { return rep.Settled })
	appendTo(t, r.e.path("logs/app.log"), header)
	r.waitOut("once.log", []string{"ts,level,msg", "#schema 1"})
	d.kill()
	r.logrotate("app.log", "copytruncate\ncompress\nrotate 1")
	other := "app-api-20261206.log"
	appendTo(t, r.e.path("logs/"+other), header)
	bl := r.write(other, "b", 3)
	r.e.start()
	r.waitOut("once.log", bl)
	waitUntil(t, "once.log holds both headers", 30*time.Second, func() bool {
		o := r.lines("once.log")
		return o["ts,level,msg"] >= 2 && o["#schema 1"] >= 2
	})
}

// TestRev29DOKDateextCopyTaken — a real copy named by logrotate dateext
// with the extension kept (app-YYYYMMDD.log, in the glob) of a
// never-committed pointer (offset 0, header first bytes) is still taken:
// read under the old epoch (the exactlyOnce sink holds the header once),
// and app.log's later lines arrive (with the pull consumer acknowledging:
// without it app.log's stream never publishes, judgement call in the
// report).
func TestRev29DOKDateextCopyTaken(t *testing.T) {
	t.Parallel()
	rev29DDateext(t, "")
}

// TestRev29DOKCustomNamesDateextCopyTaken — as above under the custom
// rotatedNames "*-[0-9]*.log": the real copy is still taken.
func TestRev29DOKCustomNamesDateextCopyTaken(t *testing.T) {
	t.Parallel()
	rev29DDateext(t, "    rotatedNames: [\"*-[0-9]*.log\"]\n")
}

func rev29DDateext(t *testing.T, feedKeys string) {
	const header = "ts,level,msg\n#schema 1\n"
	r := rev29BNewWith(t, feedKeys)
	r.create("app.log")
	d := r.e.start()
	d.waitFor("app.log tracked", 30*time.Second, func(rep *report) bool { return rep.Settled })
	appendTo(t, r.e.path("logs/app.log"), header)
	r.waitOut("once.log", []string{"ts,level,msg", "#schema 1"})
	d.kill()
	r.logrotate("app.log", "copytruncate\ndateext\nextension .log\nrotate 1")
	al := r.write("app.log", "a", 3)
	d2 := r.e.start()
	_, stopPull := rev29BPull(d2)
	defer stopPull()
	ok := false
	for i := 0; i < 100 && !ok; i++ {
		time.Sleep(100 * time.Millisecond)
		p, o := r.lines("plain.log"), r.lines("once.log")
		ok = p[al[2]] > 0 && o[al[2]] > 0
	}
	if !ok {
		_, st, _ := d2.get("/feed.status")
		t.Fatalf("app.log's lines not delivered after 10s: plain %v once %v; status %s", r.lines("plain.log"), r.lines("once.log"), st)
	}
	time.Sleep(500 * time.Millisecond)
	once := r.lines("once.log")
	if once["ts,level,msg"] != 1 || once["#schema 1"] != 1 {
		t.Errorf("once.log header counts %d/%d, want 1/1 (the copy read under the old epoch)", once["ts,level,msg"], once["#schema 1"])
	}
	if g := rev29CGrep(d2.log(), "copied and cut"); g == "(none)" {
		t.Errorf("the dateext copy was not taken for app.log's copy")
	}
}

// TestRev29DOKSymlinkedDirDateextCopyTaken — the glob's directory is a
// symlink (logs -> real): a never-committed pointer's dateext copy with
// the extension kept (app-YYYYMMDD.log, in the glob) is taken, and
// app.log's later lines arrive once each in the exactlyOnce sink.
func TestRev29DOKSymlinkedDirDateextCopyTaken(t *testing.T) {
	t.Parallel()
	const header = "ts,level,msg\n#schema 1\n"
	r := rev29BNew(t)
	if err := os.Remove(r.e.path("logs")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(r.e.path("real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(r.e.path("real"), r.e.path("logs")); err != nil {
		t.Fatal(err)
	}
	r.create("app.log")
	d := r.e.start()
	d.waitFor("app.log tracked", 30*time.Second, func(rep *report) bool { return rep.Settled })
	appendTo(t, r.e.path("logs/app.log"), header)
	r.waitOut("once.log", []string{"ts,level,msg", "#schema 1"})
	d.kill()
	r.logrotate("app.log", "copytruncate\ndateext\nextension .log\nrotate 1")
	al := r.write("app.log", "a", 3)
	d2 := r.e.start()
	_, stopPull := rev29BPull(d2)
	defer stopPull()
	r.waitOut("once.log", al)
	r.waitOut("plain.log", al)
	time.Sleep(500 * time.Millisecond)
	once := r.lines("once.log")
	if once["ts,level,msg"] != 1 || once["#schema 1"] != 1 {
		t.Errorf("once.log header counts %d/%d, want 1/1 (the copy read under the old epoch)", once["ts,level,msg"], once["#schema 1"])
	}
	for _, l := range al {
		if once[l] != 1 {
			t.Errorf("once.log holds %q %d times, want 1", l, once[l])
		}
	}
	if g := rev29CGrep(d2.log(), "copied and cut"); g == "(none)" {
		t.Errorf("the dateext copy was not taken for app.log's copy")
	}
}
