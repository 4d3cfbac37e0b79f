package e2e

// Black-box audit of DESIGN §3 (pointer file), §4 (file source) and §10
// (globs): each test here failed on the binary when it was written, because
// the binary disagrees with the DESIGN sentence its doc comment quotes.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// auditGlobConfig is one glob feed over ./in/* with short timers.
const auditGlobConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*
    rotateWaitMillis: 1000
    scanIntervalMillis: 500
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
    fsync: never
`

// auditFiles reads /feed.status?files=1 raw: the feed objects as maps, so
// that a missing key and a null are told apart.
func auditFiles(t testing.TB, d *daemon) []map[string]json.RawMessage {
	t.Helper()
	code, body, err := d.get("/feed.status?files=1")
	if err != nil || code != 200 {
		t.Fatalf("/feed.status?files=1: %d %v %s", code, err, body)
	}
	var r struct {
		Feeds []map[string]json.RawMessage `json:"feeds"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return r.Feeds
}

// TestAuditFilesDanglingSymlinkSkipped: DESIGN §10 "Non-regular matches
// (directories, FIFOs, sockets, devices, dangling symlinks, symlinks to
// anything but a regular file) are skipped, counted once per path in
// `filesSkipped`, logged once." (the README says the same of dangling
// links). The binary counts a directory but not a dangling symlink that
// matches the glob: its stat fails with ENOENT and the scan takes it for a
// file deleted since the listing, so filesSkipped stays 1 (the directory)
// instead of 2, and nothing is logged for the link.
func TestAuditFilesDanglingSymlinkSkipped(t *testing.T) {
	e := newEnv(t, auditGlobConfig)
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 3)
	if err := os.Mkdir(filepath.Join(in, "dir.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere.log", filepath.Join(in, "dangling.log")); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	d.waitSettled(20 * time.Second)
	time.Sleep(1500 * time.Millisecond) // two rescans (scanIntervalMillis 500)
	g := getGlobStatus(t, d)
	if n := g.Feeds[0].FilesSkipped; n != 2 {
		t.Fatalf("filesSkipped %d, want 2 (the directory and the dangling symlink); files %+v", n, g.Feeds[0].Files)
	}
	logged := 0
	for _, l := range strings.Split(d.log(), "\n") {
		if strings.Contains(l, "skipped") && strings.Contains(l, "dangling.log") {
			logged++
		}
	}
	if logged != 1 {
		t.Fatalf("the dangling symlink is logged %d times, want once:\n%s", logged, tail(d.log(), 2000))
	}
}

// TestAuditFilesEmptyGlobListsNoFiles: DESIGN §10 "`GET
// /feed.status?files=1` adds to each feed `files`:
// `[{"path","fileKey","epoch","offset","size","state"}]` sorted by path".
// A glob feed that matches nothing (WAITING_FOR_FILE) gets no `files` key at
// all from the binary (the key is omitted, not an empty list), so a client
// that reads `files` of every feed finds it missing.
func TestAuditFilesEmptyGlobListsNoFiles(t *testing.T) {
	e := newEnv(t, auditGlobConfig)
	if err := os.MkdirAll(e.path("in"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	d.waitFor("WAITING_FOR_FILE", 20*time.Second, func(r *report) bool {
		return len(r.Feeds) == 1 && r.Feeds[0].State == "WAITING_FOR_FILE"
	})
	f := auditFiles(t, d)[0]
	raw, ok := f["files"]
	if !ok {
		t.Fatalf("?files=1: feed has no \"files\" key; keys %v", keysOf(f))
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		t.Fatalf("?files=1: files is %s, want []", raw)
	}
}

// TestAuditFilesCopyListedWithEpochZero: DESIGN §3 "epoch (uint64, random,
// never 0)", §10 "`GET /feed.status?files=1` adds to each feed `files`:
// `[{"path","fileKey","epoch","offset","size","state"}]` … `CLOSED`
// (inactive, descriptor closed, still tracked)". After a live copytruncate
// inside the glob (a.log copied to a.log.1, a.log truncated), the copy is
// read from the old offset under a.log's stream, as §10 says — but the
// binary then lists a.log.1 as a tracked file with `"epoch":
// "0000000000000000"` (offset 0, state CLOSED): an epoch no stream, pointer
// or epochs-file line ever had. The copy is a tracked file (filesTracked
// counts it): it is listed, once, with the epoch a.log's stream read it
// under, read to its size.
func TestAuditFilesCopyListedWithEpochZero(t *testing.T) {
	e := newEnv(t, auditGlobConfig)
	in := e.path("in")
	orig := filepath.Join(in, "a.log")
	writeFileLines(t, orig, "a", 0, 2)
	d := e.start()
	d.waitSettled(20 * time.Second)
	before := getGlobStatus(t, d).Feeds[0].Files
	if len(before) != 1 || !hex16.MatchString(before[0].Epoch) {
		t.Fatalf("files %+v, want a.log under an epoch", before)
	}
	readUnder := before[0].Epoch // the epoch a.log's lines (and its copy's tail) are read under
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "a.log.1"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := os.Truncate(orig, 0); err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(in, "a.log.1"), "a 2\n")
	out := e.path("out.log")
	waitUntil(t, "3 lines", 20*time.Second, func() bool { return globLines(out) >= 3 })
	time.Sleep(2500 * time.Millisecond) // rotateWaitMillis and a few rescans
	d.waitSettled(20 * time.Second)
	if got := perTag(t, out)["a"]; len(got) != 3 {
		t.Fatalf("output %v, want a 0..2 once each", got)
	}
	g := getGlobStatus(t, d)
	for _, f := range g.Feeds[0].Files {
		if !hex16.MatchString(f.Epoch) || f.Epoch == "0000000000000000" {
			t.Errorf("files entry %s (state %s, offset %d, size %d) has epoch %q, want 16 hex digits, never 0",
				f.Path, f.State, f.Offset, f.Size, f.Epoch)
		}
		if filepath.Base(f.Path) == "a.log.1" && (f.Epoch != readUnder || f.Offset != 12 || f.Size != 12) {
			t.Errorf("the copy's entry: epoch %s, offset %d, size %d; want %s (a.log's stream read it under it), 12 and 12",
				f.Epoch, f.Offset, f.Size, readUnder)
		}
	}
	if n := len(g.Feeds[0].Files); n != g.Feeds[0].FilesTracked || n != 2 {
		t.Errorf("%d files entries, filesTracked %d; want one entry per tracked file (a.log, a.log.1)", n, g.Feeds[0].FilesTracked)
	}
}

// TestAuditFilesGlobSymlinkToSinkOutput: DESIGN §10 "Matched: regular files
// (symlinks followed to regular files …). Never matched: a `file`/`stdout`
// sink's output, a dead-letter ledger, anything under dataDir". A symlink
// inside the glob whose target is the feed's own file sink output is
// matched by the binary and read: every line written to the output is read
// back and written again, a feedback loop (tens of thousands of copies of
// one input line within a second) instead of the one line of a.log.
func TestAuditFilesGlobSymlinkToSinkOutput(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*.log
    scanIntervalMillis: 500
processors:
  - name: out
    feed: app
    type: file
    path: ./out.txt
    fsync: never
`)
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 1)
	if err := os.Symlink("../out.txt", filepath.Join(in, "o.log")); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	out := e.path("out.txt")
	waitUntil(t, "a's line", 20*time.Second, func() bool { return globLines(out) >= 1 })
	time.Sleep(1500 * time.Millisecond) // rescans; a loop has run by now
	d.stop()
	if n := globLines(out); n != 1 {
		t.Fatalf("the output has %d lines, want 1 (a 0): the sink's output was matched through the symlink in/o.log and read back", n)
	}
}

// TestAuditFilesGlobSymlinkIntoDataDir: DESIGN §10 "Never matched: … a
// dead-letter ledger, anything under dataDir". A symlink inside the glob to
// dataDir/feeds/app.epochs is matched by the binary and the epochs file's
// JSON lines are delivered to the sink as input lines.
func TestAuditFilesGlobSymlinkIntoDataDir(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*.log
    scanIntervalMillis: 500
processors:
  - name: out
    feed: app
    type: file
    path: ./out.txt
    fsync: never
`)
	in := e.path("in")
	writeFileLines(t, filepath.Join(in, "a.log"), "a", 0, 1)
	if err := os.Symlink("../state/feeds/app.epochs", filepath.Join(in, "e.log")); err != nil {
		t.Fatal(err)
	}
	d := e.start()
	out := e.path("out.txt")
	waitUntil(t, "a's line", 20*time.Second, func() bool { return globLines(out) >= 1 })
	time.Sleep(1500 * time.Millisecond) // rescans find the epochs file
	d.waitSettled(20 * time.Second)
	d.stop()
	data, _ := os.ReadFile(out)
	if string(data) != "a 0\n" {
		t.Fatalf("output %q, want only \"a 0\\n\": a file under dataDir was matched through the symlink in/e.log", tail(string(data), 600))
	}
}

// TestAuditFilesSingleFeedSymlinkToSinkOutput: DESIGN §10 "(a single-file
// feed whose path is a sink's output is a config error)", §9 "`run` exits
// 2 on the same errors". A feed whose path is a symlink to its own file
// sink's output is refused when the path names the output directly, but
// through the symlink the binary starts, and a line appended to the output
// then loops through the feed and the sink without end.
func TestAuditFilesSingleFeedSymlinkToSinkOutput(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./link.log
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
    fsync: never
`)
	if err := os.WriteFile(e.path("out.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("out.log", e.path("link.log")); err != nil {
		t.Fatal(err)
	}
	d := e.spawn()
	// "FILE:LINE: feeds[0].path: …" at the feed's path key (line 6), naming
	// the feed's path. `validate` checks the file only (DESIGN §9: it
	// looks at no path on disk), so it passes this config, as it passes a
	// path that is a directory.
	want := func(out string) bool {
		return hasLine(out, func(l string) bool {
			return strings.HasPrefix(l, e.cfg+":6: feeds[0].path: ") && strings.Contains(l, e.path("link.log"))
		})
	}
	// Wait (up to 30 s: a loaded CI may take seconds to start the
	// binary) for either the exit or the daemon listening, then judge.
	err := d.waitListening(30 * time.Second)
	if d.exited() {
		if d.code != 2 || !want(d.log()) {
			t.Fatalf("run exited %d, want 2 and a line %s:6: feeds[0].path: …link.log…\n%s", d.code, e.cfg, tail(d.log(), 2000))
		}
		if _, stderr, code := cli(t, "validate", "--config", e.cfg); code != 0 {
			t.Fatalf("validate: exit %d, stderr %q; want 0 (it checks the file only)", code, stderr)
		}
		return
	}
	if err != nil {
		d.kill()
		t.Fatalf("run neither exited (want exit 2) nor listened within 30 s: %v\n%s", err, tail(d.log(), 2000))
	}
	appendTo(t, e.path("out.log"), "hello\n")
	time.Sleep(1500 * time.Millisecond)
	d.kill()
	t.Fatalf("run started on a feed whose path is a symlink to its sink's output (want exit 2); after one appended line the output has %d lines",
		globLines(e.path("out.log")))
}

// auditGlobPointers returns `pointer show --json` of every pointer file of
// glob feed app.
func auditGlobPointers(t testing.TB, e *env) []pointerRecord {
	t.Helper()
	paths, err := filepath.Glob(e.path("state/feeds/app/*.ptr"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []pointerRecord
	for _, p := range paths {
		rec, ok := showPointer(t, p)
		if ok {
			recs = append(recs, rec)
		}
	}
	return recs
}

// TestAuditFilesFingerprintGrowsAfterRenameInGlob: DESIGN §3 "The
// fingerprint grows at commit while it covers < 4 KiB and the file is
// longer — always read from the open file descriptor, never from whatever
// the path names now." §10 "A rename within the glob keeps the stream". A
// glob file (every line acknowledged) is renamed within the glob (b.log →
// c.log); the stream's reader finds b.log gone and closes the file
// ("input path is gone … closing it"), and a line appended right then is
// read after the stream reopens at c.log and committed: the pointer's
// offset follows (12), but the binary never grows the fingerprint again —
// fingerprintLength stays 8 (its length before the rename) on a 12-byte
// file, 1.5 s later.
func TestAuditFilesFingerprintGrowsAfterRenameInGlob(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in/*.log
    queueCapacity: 4
    maxPendingAcks: 4
    rotateWaitMillis: 300
    scanIntervalMillis: 500
processors:
  - name: p
    feed: app
    type: pull
`)
	in := e.path("in")
	b := filepath.Join(in, "b.log")
	writeFileLines(t, b, "b", 0, 1)
	d := e.start()
	ackAll(t, d, pullFromN(t, d, "p", 1, ""))
	writeFileLines(t, b, "b", 1, 1)
	ackAll(t, d, pullFromN(t, d, "p", 1, ""))
	time.Sleep(1500 * time.Millisecond)
	c := filepath.Join(in, "c.log")
	if err := os.Rename(b, c); err != nil {
		t.Fatal(err)
	}
	// The stream's reader, finding b.log gone, closes the file
	// (rotateWaitMillis); the line is appended as soon as it did, before
	// the stream is opened again at c.log.
	waitUntil(t, "the stream closing b.log", 20*time.Second, func() bool {
		return strings.Contains(d.log(), "input path is gone and the open file is read to its end; closing it")
	})
	writeFileLines(t, c, "b", 2, 1)
	time.Sleep(500 * time.Millisecond)
	ackAll(t, d, pullFromN(t, d, "p", 1, ""))
	time.Sleep(1500 * time.Millisecond) // no status request meanwhile
	st, err := os.Stat(c)
	if err != nil {
		t.Fatal(err)
	}
	recs := auditGlobPointers(t, e)
	if len(recs) != 1 {
		t.Fatalf("%d pointer files, want 1: %+v", len(recs), recs)
	}
	r := recs[0]
	if r.Offset != st.Size() || r.FingerprintLength != st.Size() {
		t.Fatalf("pointer offset %d, fingerprintLength %d; the file is %d bytes: want both %d",
			r.Offset, r.FingerprintLength, st.Size(), st.Size())
	}
}

// TestAuditFilesGoneEntryReadToItsEnd: DESIGN §10 "`files`:
// `[{"path","fileKey","epoch","offset","size","state"}]` … `GONE` (deleted
// or renamed out of the glob, read to its end, waiting to be forgotten)",
// "A file renamed out of the glob is read to its end". a.log (12 bytes) is
// renamed out of the glob and a 4-byte line appended to it after the rename
// is delivered, so it was read to its end at 16 bytes. The binary lists it
// GONE with `"size": 12` (the size before the rename) and an offset of
// either 16 or 0 depending on timing (0: the pointer's empty record after
// its reset), never offset = size = 16. (b.log, deleted without growing, is
// listed GONE with offset = size = 12, but under the epoch of its pointer's
// empty record after its reset, not the one its lines were read under.)
// Each GONE entry shows the epoch its lines were read under.
func TestAuditFilesGoneEntryReadToItsEnd(t *testing.T) {
	e := newEnv(t, auditGlobConfig)
	in := e.path("in")
	a := filepath.Join(in, "a.log")
	writeFileLines(t, a, "a", 0, 3)
	writeFileLines(t, filepath.Join(in, "b.log"), "b", 0, 3)
	d := e.start()
	d.waitSettled(20 * time.Second)
	readUnder := map[string]string{} // base name → the epoch its lines are read under
	for _, f := range getGlobStatus(t, d).Feeds[0].Files {
		readUnder[filepath.Base(f.Path)] = f.Epoch
	}
	if err := os.Rename(a, e.path("a.moved")); err != nil {
		t.Fatal(err)
	}
	// A line appended to it after the rename is still read (§10 "A file
	// renamed out of the glob is read to its end").
	writeFileLines(t, e.path("a.moved"), "a", 3, 1)
	out := e.path("out.log")
	waitUntil(t, "a 3", 20*time.Second, func() bool { return len(perTag(t, out)["a"]) == 4 })
	if err := os.Remove(filepath.Join(in, "b.log")); err != nil {
		t.Fatal(err)
	}
	var g globStatus
	waitUntil(t, "both files GONE", 20*time.Second, func() bool {
		g = getGlobStatus(t, d)
		n := 0
		for _, f := range g.Feeds[0].Files {
			if f.State == "GONE" {
				n++
			}
		}
		return n == 2
	})
	for _, f := range g.Feeds[0].Files {
		want := int64(12) // b.log: 3 lines
		if filepath.Base(f.Path) == "a.log" {
			want = 16 // 4 lines
		}
		if f.Offset != want || f.Size != want {
			t.Errorf("GONE entry %s: offset %d, size %d; want %d and %d (read to its end)", filepath.Base(f.Path), f.Offset, f.Size, want, want)
		}
		if e := readUnder[filepath.Base(f.Path)]; f.Epoch != e || !hex16.MatchString(e) {
			t.Errorf("GONE entry %s: epoch %q, want %q, the epoch its lines were read under", filepath.Base(f.Path), f.Epoch, e)
		}
	}
}

// TestAuditFilesWaitingFileListedWithEpochZero: DESIGN §3 "epoch (uint64,
// random, never 0)", §10 "Each matched file is its own stream: its own
// epoch" and "`files`: `[{"path","fileKey","epoch","offset","size","state"}]`".
// Under maxOpenFiles 2 (one open input and its pointer) with the only
// subscriber paused (a pull client that does not pull), the files waiting
// for their first turn are listed BEHIND with `"epoch":
// "0000000000000000"`, an epoch that is never valid. No epoch is drawn for
// a file before its stream starts (its pointer is named by it then): a
// waiting file's epoch is null (README "Status fields"), offset 0; once
// the client pulls and acknowledges every line, each file has been read
// under an epoch of its own, listed with it.
func TestAuditFilesWaitingFileListedWithEpochZero(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
  token: `+ctToken+`
feeds:
  - name: app
    path: ./in/*.log
    maxOpenFiles: 2
    queueCapacity: 4
    maxPendingAcks: 4
processors:
  - name: p
    feed: app
    type: pull
`)
	in := e.path("in")
	for _, n := range []string{"a", "b", "c"} {
		writeFileLines(t, filepath.Join(in, n+".log"), n, 0, 50)
	}
	d := e.start()
	var g globStatus
	waitUntil(t, "3 files tracked, paused", 20*time.Second, func() bool {
		g = getGlobStatus(t, d)
		return g.Feeds[0].FilesTracked == 3 && g.Feeds[0].FilesBehind == 3 && len(g.Feeds[0].Files) == 3
	})
	time.Sleep(500 * time.Millisecond)
	type entry struct {
		Path   string  `json:"path"`
		Epoch  *string `json:"epoch"`
		Offset int64   `json:"offset"`
		Size   int64   `json:"size"`
		State  string  `json:"state"`
	}
	files := func() []entry {
		var fs []entry
		if err := json.Unmarshal(auditFiles(t, d)[0]["files"], &fs); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	withEpoch := 0
	for _, f := range files() {
		switch {
		case f.Epoch == nil:
			if f.Offset != 0 || f.State != "BEHIND" {
				t.Errorf("files entry %s: epoch null, offset %d, state %s; want a file waiting for its first turn (offset 0, BEHIND)",
					filepath.Base(f.Path), f.Offset, f.State)
			}
		case !hex16.MatchString(*f.Epoch) || *f.Epoch == "0000000000000000":
			t.Errorf("files entry %s (state %s, offset %d, size %d) has epoch %q, want a stream epoch (16 hex digits, never 0) or null",
				filepath.Base(f.Path), f.State, f.Offset, f.Size, *f.Epoch)
		default:
			withEpoch++
		}
	}
	if withEpoch == 0 {
		t.Errorf("no files entry has an epoch, want the open file's: %+v", files())
	}
	pulled := 0
	deadline := time.Now().Add(30 * time.Second)
	for pulled < 150 && time.Now().Before(deadline) {
		evs := pullFrom(t, d, "p", "max=50&wait=200ms")
		ackAll(t, d, evs)
		pulled += len(evs)
	}
	if pulled != 150 {
		t.Fatalf("pulled %d lines, want 150", pulled)
	}
	var last []entry
	waitUntil(t, "every file read under an epoch", 20*time.Second, func() bool {
		last = files()
		for _, f := range last {
			if f.Epoch == nil || f.Offset != 240 {
				return false
			}
		}
		return len(last) == 3
	})
	seen := map[string]bool{}
	for _, f := range last {
		if !hex16.MatchString(*f.Epoch) || *f.Epoch == "0000000000000000" || seen[*f.Epoch] {
			t.Errorf("files entry %s: epoch %q, want an epoch of its own (16 hex digits, never 0)", filepath.Base(f.Path), *f.Epoch)
		}
		seen[*f.Epoch] = true
	}
}

// TestAuditFilesGlobMatchesStdoutSinkOutput: DESIGN §10 "Never matched: a
// `file`/`stdout` sink's output, a dead-letter ledger, anything under
// dataDir". The daemon's standard output is a file in the directory the
// glob `./*.log` covers (as when a launcher redirects it to a log file),
// and the feed's stdout sink writes there. The binary matches that file
// and reads its own stdout output back: a.log's one line comes out
// thousands of times within a second, a feedback loop.
func TestAuditFilesGlobMatchesStdoutSinkOutput(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status:
  listen: {{ADDR}}
log: {level: error}
feeds:
  - name: app
    path: ./*.log
    scanIntervalMillis: 500
processors:
  - name: so
    feed: app
    type: stdout
`)
	writeFileLines(t, e.path("a.log"), "a", 0, 1)
	d := e.start() // its stdout (and stderr) is e.path("daemon-0.log")
	waitUntil(t, "a's line on stdout", 20*time.Second, func() bool { return strings.Contains(d.log(), "a 0\n") })
	time.Sleep(1500 * time.Millisecond)
	d.kill()
	if n := strings.Count(d.log(), "a 0\n"); n != 1 {
		t.Fatalf("stdout has %d copies of \"a 0\", want 1: the stdout sink's output file %s was matched by the glob and read back",
			n, filepath.Base(d.logPath))
	}
}

// TestAuditFilesRenameIntoPlaceIsACopy: DESIGN §10 "A new key is a new
// stream, read from its start … — except a copy: a new key whose first
// bytes match a tracked file's fingerprint is held back for
// `rotateWaitMillis`; if the tracked file is truncated or disappears
// meanwhile, the new file is its copy (§4) and is read from the old offset
// under the old stream", §3 "The same content under a new file key
// (copy-up, NFS remount, rename-into-place of the same bytes plus appended
// ones) keeps the pointer and epoch". In a glob, a.log (2 lines, read and
// committed) is replaced by a rename into place of a copy of its bytes
// plus one appended line: the old file disappears as the new key appears.
// The binary reads the new file from its start under a new epoch, so a 0
// and a 1 come out twice, instead of reading it from offset 8 (only a 2).
func TestAuditFilesRenameIntoPlaceIsACopy(t *testing.T) {
	e := newEnv(t, auditGlobConfig)
	in := e.path("in")
	a := filepath.Join(in, "a.log")
	writeFileLines(t, a, "a", 0, 2)
	d := e.start()
	out := e.path("out.log")
	waitUntil(t, "2 lines", 20*time.Second, func() bool { return globLines(out) >= 2 })
	d.waitSettled(20 * time.Second)
	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	tmp := e.path("a.tmp") // outside the glob
	if err := os.WriteFile(tmp, append(data, "a 2\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, a); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a 2", 20*time.Second, func() bool {
		got := perTag(t, out)["a"]
		return len(got) > 0 && got[len(got)-1] == 2
	})
	time.Sleep(2 * time.Second) // rotateWaitMillis 1000 and rescans
	d.waitSettled(20 * time.Second)
	if got := perTag(t, out)["a"]; len(got) != 3 {
		t.Fatalf("output a %v, want [0 1 2]: the renamed-in copy was read from its start, not from the old offset", got)
	}
}
