package e2e

// Review 30c of c4743fd..cb947b6 (a glob stream's deleted file's pointer
// kept — "held" — for the empty new file at its path; one held pointer per
// path; forgetClosed resetting a record bound while empty; countNextGone
// leaving a held mark's next file to its own pointer when that pointer's
// record names the file's first bytes).

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rev30CMissing: the lines of ls not in the exactlyOnce json sink.
func rev30CMissing(g *aud11AGenEnv, ls []string) []string {
	objs, _ := aud11AReadOnce(g.e.path("out/once.jsonl"))
	have := map[string]bool{}
	for _, o := range objs {
		have[o.Line] = true
	}
	var out []string
	for _, s := range ls {
		if !have[s] {
			out = append(out, strings.Fields(s)[1])
		}
	}
	return out
}

// rev30CHeldThenNextOpened: a.log (R0, 10 lines) read and acknowledged; a
// live create + compress rotation (a.log.1 gzipped and deleted at once)
// leaves an empty a.log (E): R0's pointer is held for E (its held line
// written). Then head is written to E and tailfeed opens E (its own
// pointer, "adopted" line naming E's first bytes) and delivers the lines
// to the sinks; the pull consumer never acknowledges them (nothing of E
// committed, so R0's pointer stays held); kill -9.
func rev30CHeldThenNextOpened(t *testing.T, head []string, r0Banner bool) (*aud11AGenEnv, *daemon) {
	t.Helper()
	g := aud11ANewGzEnv(t, "./logs/*.log")
	if r0Banner {
		appendTo(t, g.app, head[0]+"\n")
	}
	g.write(t, 10) // R0
	d := g.e.start()
	g.settle(t, d)
	time.Sleep(aud11AGap)
	g.rot() // live: a.log → a.log.1.gz (a.log.1 deleted), a new empty a.log (E)
	rev30AWaitDeletedSeen(t, d)
	if os.Getenv("REV30C_NOHELD") == "" {
		waitUntil(t, "R0's held line", 20*time.Second, func() bool {
			return strings.Contains(rev30AEpochs(g), `"reason":"held"`)
		})
	} else {
		time.Sleep(1500 * time.Millisecond) // R0's stream closes (code before the held pointer)
	}
	g.settle(t, d)
	appendTo(t, g.app, strings.Join(head, "\n")+"\n")
	g.lines = append(g.lines, head...)
	waitUntil(t, "E's head in the exactlyOnce sink (not acknowledged by the pull consumer)", 20*time.Second, func() bool {
		aud11APullAck(t, d, false)
		return len(rev30CMissing(g, head)) == 0
	})
	if !strings.Contains(rev30AEpochs(g), `"reason":"held"`) && os.Getenv("REV30C_NOHELD") == "" {
		t.Fatalf("no held line:\n%s", rev30AEpochs(g))
	}
	d.kill()
	return g, d
}

// rev30CNextGoneWhileDown: rev30CHeldThenNextOpened, then while tailfeed
// is down 7 lines to E and E goes: "delete" (E deleted, a new a.log Z made
// with 5 lines) or "gz" (logrotate create + compress: E → a.log.1.gz, a
// new a.log Z with 5 lines). banner: E's and Z's first line is the same
// banner line (an application's header) and E's fingerprint covers only
// it. It returns E's 7 lines, Z's lines and the settled report's feed.
func rev30CNextGoneWhileDown(t *testing.T, how string, banner, r0Banner bool) (g *aud11AGenEnv, e7, z []string, f feedReport, d *daemon) {
	t.Helper()
	head := []string{"a.log #head0 first", "a.log #head1 second", "a.log #head2 third"}
	if banner {
		head = []string{"# app log v1 banner"}
	}
	g, d = rev30CHeldThenNextOpened(t, head, r0Banner)
	n := len(g.lines)
	g.write(t, 7) // E's lines, written while tailfeed is down
	e7 = append([]string(nil), g.lines[n:]...)
	switch how {
	case "delete":
		// Z made before E is deleted: another inode.
		if err := os.WriteFile(g.app+".new", nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(g.app); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(g.app+".new", g.app); err != nil {
			t.Fatal(err)
		}
	case "deleteReuse":
		// Z on E's inode (the file system gives the freed inode again).
		ino := rev30AIno(t, g.app)
		if err := os.Remove(g.app); err != nil {
			t.Fatal(err)
		}
		rev30CFileOnInode(t, g.app, ino)
	case "gz":
		// logrotate create + compress, no delaycompress.
		time.Sleep(aud11AGap)
		g.rot() // E → a.log.1.gz, R0 → a.log.2.gz, a new a.log (Z)
	case "gzDel":
		time.Sleep(aud11AGap)
		g.rot() // E → a.log.1.gz, R0 → a.log.2.gz, a new a.log (Z)
		if err := os.Remove(g.app + ".1.gz"); err != nil {
			t.Fatal(err)
		}
	}
	if banner {
		appendTo(t, g.app, head[0]+"\n")
	}
	n = len(g.lines)
	g.write(t, 5) // Z
	z = append([]string(nil), g.lines[n:]...)
	d = g.e.start()
	var r *report
	waitUntil(t, "settled with Z's lines in the exactlyOnce sink", 30*time.Second, func() bool {
		aud11APullAck(t, d, true)
		rep, err := d.status()
		if err != nil || !rep.Settled {
			return false
		}
		r = rep
		return len(rev30CMissing(g, z)) == 0
	})
	time.Sleep(300 * time.Millisecond)
	r, _ = statusRaw(t, d)
	return g, e7, z, r.feed(t, "app"), d
}

// rev30CFileOnInode makes an empty file at path on inode ino (freed just
// before): temporary files (no glob match) are made beside it until one
// gets it, then renamed to path; the others removed. Skips the test when
// the file system does not give it again.
func rev30CFileOnInode(t *testing.T, path string, ino uint64) {
	t.Helper()
	var made []string
	defer func() {
		for _, p := range made {
			os.Remove(p)
		}
	}()
	for i := range 400 {
		p := fmt.Sprintf("%s.tmp%d", path, i)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if rev30AIno(t, p) == ino {
			if err := os.Rename(p, path); err != nil {
				t.Fatal(err)
			}
			return
		}
		made = append(made, p)
	}
	t.Skipf("inode %d not given again in 400 creations", ino)
}

// rev30COnceCounts: how many times each line is in the exactlyOnce sink.
func rev30COnceCounts(g *aud11AGenEnv) map[string]int {
	objs, _ := aud11AReadOnce(g.e.path("out/once.jsonl"))
	n := map[string]int{}
	for _, o := range objs {
		n[o.Line]++
	}
	return n
}

// rev30CTwice: the lines of ls more than once in the exactlyOnce sink.
func rev30CTwice(g *aud11AGenEnv, ls []string) []string {
	n := rev30COnceCounts(g)
	var out []string
	for _, s := range ls {
		if n[s] > 1 {
			out = append(out, strings.Fields(s)[1])
		}
	}
	return out
}

// TestRev30CXNextFileDeletedBannerRereadsOlderGz: DESIGN §4 "Nothing green
// over a loss. lossless is true only while tailfeed can show that no line
// was skipped"; §2 "The duplicates after a crash are exactly the lines
// acknowledged since the last commit"; README (Many files per feed): one
// next file "that got a pointer of its own before the stop is left to that
// pointer when it names the file's first bytes — found by them beside the
// path, a .gz too, it is read, else counted". Every file of a.log starts
// with the application's banner line "# app log v1 banner". R0 (banner +
// 10 lines) read, acknowledged; live create + compress (a.log.1.gz = R0);
// R0's pointer held for the empty new a.log E; the banner is written to E,
// tailfeed opens E (its pointer's "adopted" line names E's first 20
// bytes: the banner), nothing of E acknowledged; kill -9. While down: 7
// lines to E, E deleted, a new a.log Z (other inode: banner + 5 lines).
// Observed: E's 7 lines lost with lossless true, lostTails 0, and R0's 10
// lines (committed long before the kill) delivered a second time under a
// new epoch: countNextGone (source/file/glob.go:3730) leaves E to its own
// pointer because that record names first bytes, and that pointer's source
// takes R0's a.log.1.gz — a file beside the path with the same first bytes
// — for its file (a .gz found by the fingerprint alone) and reads it from
// 0. Expected: lostTails >= 1 (lossless false), as before the skip (the
// held mark's next file found nowhere by its key). With the skip (00a162f,
// glob.go:3730) removed from the current code E is counted (lossless
// false, lostTails 1). At b75f4af (before every change under review: no
// held pointer for a deleted file) it failed the same way (lossless true):
// c4743fd's held mark counted it, 00a162f's skip takes that back. R0's
// re-read happens in all three (logged, a judgement call: §4 lets a .gz
// match by the fingerprint alone, here a 20-byte banner).
func TestRev30CXNextFileDeletedBannerRereadsOlderGz(t *testing.T) {
	t.Parallel()
	g, e7, _, f, _ := rev30CNextGoneWhileDown(t, "delete", true, true)
	if miss := rev30CMissing(g, e7); len(miss) != 7 {
		t.Logf("E's lines missing: %v (expected all 7: E was deleted while down)", miss)
	}
	if f.Lossless || f.LostTails == 0 {
		t.Errorf("E (7 lines written while down, deleted) lost, yet lossless %v, lostTails %d; want lossless false, lostTails >= 1", f.Lossless, f.LostTails)
	}
	if tw := rev30CTwice(g, g.lines[:10]); len(tw) > 0 {
		// Judgement call (not asserted): a .gz matching the fingerprint
		// alone is the pointer's generation (DESIGN §4); also without the
		// skip.
		t.Logf("R0's committed lines delivered again after the restart: %d of 10 twice in the exactlyOnce sink %v", len(tw), tw)
	}
}

// TestRev30CXNextFileDeletedInodeReusedUncounted: DESIGN §4 "Nothing green
// over a loss"; README (Many files per feed): "A restart that finds no
// file of [the held line's next key] beside the path (at it, or rotated
// to app.log.1; one born after the line is another file on its inode)
// counts lostTails 1 for it". As above without R0's banner: E (banner
// only, opened, nothing acknowledged; kill -9), 7 lines to E while down, E
// deleted and a new a.log Z made on E's freed inode (banner + 5 lines).
// Observed: E's 7 lines lost, lossless true, lostTails 0: countNextGone
// (glob.go:3730) no longer counts E because E's own pointer names first
// bytes, and that pointer takes Z (same key, same first 20 bytes — born
// after the held line, which the held-mark check knew) as E. Expected:
// lostTails >= 1. Skipped when the file system does not reuse the inode.
// Passes with the skip removed; fails at b75f4af too (no held mark then).
func TestRev30CXNextFileDeletedInodeReusedUncounted(t *testing.T) {
	t.Parallel()
	g, e7, _, f, _ := rev30CNextGoneWhileDown(t, "deleteReuse", true, false)
	if miss := rev30CMissing(g, e7); len(miss) != 7 {
		t.Logf("E's lines missing: %v (expected all 7: E was deleted while down)", miss)
	}
	if f.Lossless || f.LostTails == 0 {
		t.Errorf("E (7 lines written while down, deleted; its inode given to the new a.log) lost, yet lossless %v, lostTails %d; want lossless false, lostTails >= 1", f.Lossless, f.LostTails)
	}
}

// TestRev30COKNextFileDeletedCounted: the controls. E (3 lines, opened,
// nothing acknowledged; kill -9), 7 lines to E while down, then E deleted
// (a new a.log Z, other inode): lostTails 1, lossless false, R0 not read
// again; the same when E is gzipped and its .gz deleted while down. E
// gzipped while down (logrotate create + compress), with or
// without a banner shared by R0 and E: every line once, and lostTails 1
// (the overcount README states for that row: nothing tells E's .gz from
// another file sharing its first bytes — see NextFileDeletedBanner…;
// the reviewer wrote lossless here against the code that left E to its
// own pointer, reverted for those findings).
func TestRev30COKNextFileDeletedCounted(t *testing.T) {
	for _, v := range []struct {
		how          string
		banner, r0b  bool
		wantLossless bool
	}{{"delete", false, false, false}, {"gz", false, false, true}, {"gz", true, true, true}, {"gzDel", false, false, false}} {
		t.Run(fmt.Sprintf("%s-banner=%v", v.how, v.banner), func(t *testing.T) {
			t.Parallel()
			g, e7, _, f, _ := rev30CNextGoneWhileDown(t, v.how, v.banner, v.r0b)
			miss := rev30CMissing(g, e7)
			if v.wantLossless {
				if len(miss) > 0 || f.Lossless || f.LostTails != 1 {
					t.Errorf("E's lines missing %v, lossless %v, lostTails %d; want none missing, lostTails 1 (the overcount README states)", miss, f.Lossless, f.LostTails)
				}
			} else if f.Lossless || f.LostTails != 1 {
				t.Errorf("E lost (%d lines missing), lossless %v lostTails %d; want false, 1", len(miss), f.Lossless, f.LostTails)
			}
			n := rev30COnceCounts(g)
			for _, s := range g.lines {
				if n[s] > 1 && !strings.Contains(s, "banner") {
					t.Errorf("line %q %d times in the exactlyOnce sink", s, n[s])
				}
			}
		})
	}
}

// rev30CAppend appends n numbered lines (a.log's numbering) to path.
func rev30CAppend(t *testing.T, g *aud11AGenEnv, path string, n int) []string {
	t.Helper()
	var b strings.Builder
	var ls []string
	for range n {
		s := fmt.Sprintf("a.log #%06d %s", g.seq, strings.Repeat("z", 10))
		g.seq++
		ls = append(ls, s)
		b.WriteString(s + "\n")
	}
	appendTo(t, path, b.String())
	g.lines = append(g.lines, ls...)
	return ls
}

// rev30CFreshEmpty makes an empty file at path on a new inode (made
// beside it, then renamed over).
func rev30CFreshEmpty(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path+".new", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// TestRev30COKRenamedOutStillWrittenSuccessorDeleted: the one-held-
// pointer-per-path rule with a file renamed out and still written to while
// its successor is deleted. A (10 lines) renamed to a.log.1 (out of the
// glob), an empty a.log (E); the application writes 20 more lines to A over
// 1.5 s; meanwhile E is deleted and another empty a.log (F) made. A's
// stream closes: its pointer is held for F (E never had one). A gzipped
// (a.log.1.gz, a.log.1 deleted); kill -9; while down 7 lines to F, create +
// compress rotation, 5 lines to Z. Restart: every line in the exactlyOnce
// sink, none of A's twice. (lostTails 1 is README's overcount for F read
// from its .gz.)
func TestRev30COKRenamedOutStillWrittenSuccessorDeleted(t *testing.T) {
	t.Parallel()
	g := aud11ANewGzEnv(t, "./logs/*.log")
	g.write(t, 10) // A
	d := g.e.start()
	g.settle(t, d)
	a1 := g.app + ".1"
	if err := os.Rename(g.app, a1); err != nil { // A renamed out of the glob
		t.Fatal(err)
	}
	rev30CFreshEmpty(t, g.app) // E
	var aLines []string
	aLines = append(aLines, g.lines...)
	for i := range 10 {
		aLines = append(aLines, rev30CAppend(t, g, a1, 2)...) // the application still writes to A
		if i == 3 {
			if err := os.Remove(g.app); err != nil { // E deleted while empty
				t.Fatal(err)
			}
			rev30CFreshEmpty(t, g.app) // F
		}
		time.Sleep(150 * time.Millisecond)
	}
	var last string
	waitUntil(t, "A's stream closed (no open row)", 20*time.Second, func() bool {
		aud11APullAck(t, d, true)
		f, body, ok := rev30BFiles(t, d)
		last = body
		if !ok || !f.Settled {
			return false
		}
		for _, r := range f.Files {
			if r.State == "BEHIND" || (r.State == "CAUGHT_UP" && r.Size > 0) {
				return false
			}
		}
		return true
	})
	_ = last
	g.settle(t, d)
	rev30BGzip(t, a1, a1+".gz")
	if err := os.Remove(a1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	g.settle(t, d)
	d.kill()
	g.write(t, 7) // F
	time.Sleep(aud11AGap)
	rev30BGzRotate(t, g.app) // F → a.log.1.gz, A → a.log.2.gz, a new a.log (Z)
	g.write(t, 5)            // Z
	d = g.e.start()
	r := g.settle(t, d)
	time.Sleep(300 * time.Millisecond)
	r, _ = statusRaw(t, d)
	f := r.feed(t, "app")
	tw := rev30CTwice(g, aLines)
	if miss := rev30CMissing(g, g.lines); len(tw) > 0 || len(miss) > 0 {
		t.Errorf("A's lines twice: %d of %d %v; missing %v; lossless %v lostTails %d", len(tw), len(aLines), tw, miss, f.Lossless, f.LostTails)
	}
}

// rev30CCopytruncateGz is logrotate's copytruncate + compress without
// delaycompress on p: earlier .gz shifted up, p copied to p.1 (its mtime
// kept), p truncated, p.1 gzipped to p.1.gz and deleted.
func rev30CCopytruncateGz(t *testing.T, p string) {
	t.Helper()
	for i := 30; i >= 1; i-- {
		if _, err := os.Stat(fmt.Sprintf("%s.%d.gz", p, i)); err == nil {
			if err := os.Rename(fmt.Sprintf("%s.%d.gz", p, i), fmt.Sprintf("%s.%d.gz", p, i+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if err := os.WriteFile(p+".1", b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p+".1", st.ModTime(), st.ModTime())
	if err := os.Truncate(p, 0); err != nil {
		t.Fatal(err)
	}
	rev30BGzip(t, p+".1", p+".1.gz")
	if err := os.Remove(p + ".1"); err != nil {
		t.Fatal(err)
	}
}

// rev30CAppendKey appends n lines keyed key (the count processor's key) to
// path; they join g.lines.
func rev30CAppendKey(t *testing.T, g *aud11AGenEnv, key, path string, n int) {
	t.Helper()
	var b strings.Builder
	for range n {
		s := fmt.Sprintf("%s #%06d %s", key, g.seq, strings.Repeat("w", 9))
		g.seq++
		g.lines = append(g.lines, s)
		b.WriteString(s + "\n")
	}
	appendTo(t, path, b.String())
}

// TestRev30COKNestedCreateGzAndCopytruncateGz: one feed ./logs/**/*.log
// over logs/a.log (create + compress, no delaycompress) and logs/sub/a.log
// (same base name; copytruncate + compress, no delaycompress). Both rotated
// live (a.log's first file's pointer held for its empty new file), kill -9
// while the new a.log is still empty, then lines to both, both rotated
// again and more lines, all while down. Restart: every line in the
// exactlyOnce sink, none twice (README's overcount for the held mark's
// next file read from its .gz, lostTails 1, is tolerated).
func TestRev30COKNestedCreateGzAndCopytruncateGz(t *testing.T) {
	t.Parallel()
	g := aud11ANewGzEnv(t, "./logs/**/*.log")
	sub := g.e.path("logs/sub/a.log")
	if err := os.MkdirAll(filepath.Dir(sub), 0o755); err != nil {
		t.Fatal(err)
	}
	rev30CAppendKey(t, g, "a", g.app, 10)
	rev30CAppendKey(t, g, "s", sub, 10)
	d := g.e.start()
	g.settle(t, d)
	time.Sleep(aud11AGap)
	rev30BGzRotate(t, g.app)
	rev30CCopytruncateGz(t, sub)
	waitUntil(t, "a.log's first file's held line", 20*time.Second, func() bool {
		aud11APullAck(t, d, true)
		return strings.Contains(rev30AEpochs(g), `"reason":"held"`)
	})
	rev30CAppendKey(t, g, "s", sub, 4) // the truncated file grows again while running
	g.settle(t, d)
	d.kill()
	rev30CAppendKey(t, g, "a", g.app, 7)
	rev30CAppendKey(t, g, "s", sub, 7)
	time.Sleep(aud11AGap)
	rev30BGzRotate(t, g.app)
	rev30CCopytruncateGz(t, sub)
	rev30CAppendKey(t, g, "a", g.app, 5)
	rev30CAppendKey(t, g, "s", sub, 5)
	d = g.e.start()
	r := g.settle(t, d)
	time.Sleep(300 * time.Millisecond)
	r, _ = statusRaw(t, d)
	f := r.feed(t, "app")
	n := rev30COnceCounts(g)
	for _, s := range g.lines {
		if n[s] != 1 {
			t.Errorf("line %q %d times in the exactlyOnce sink (lossless %v lostTails %d)", s, n[s], f.Lossless, f.LostTails)
		}
	}
	counts := aud5Counts(t, d, "counter", "")
	if counts["a"] != 22 || counts["s"] != 26 {
		t.Errorf("count a %v (want 22), s %v (want 26)", counts["a"], counts["s"])
	}
	t.Logf("lossless %v lostTails %d", f.Lossless, f.LostTails)
}

// TestRev30COKIdleRotationAfterRestart: a held pointer taken at a restart
// (clean stop or kill -9) by the still-empty new file E at its path (its
// record reset to E, offset 0); a live create + compress rotation of the
// empty E (an idle application): E's record is held for the empty F; kill
// -9, 7 lines to F and a rotation (F → a.log.1.gz) and 5 lines while down.
// Restart: every line once (lostTails 1 is README's overcount for F read
// from its .gz).
func TestRev30COKIdleRotationAfterRestart(t *testing.T) {
	for _, v := range []string{"stop", "kill"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			g := aud11ANewGzEnv(t, "./logs/*.log")
			g.write(t, 10) // A
			d := g.e.start()
			g.settle(t, d)
			time.Sleep(aud11AGap)
			rev30BGzRotate(t, g.app) // A → a.log.1.gz, an empty a.log (E)
			waitUntil(t, "A's held line", 20*time.Second, func() bool {
				return strings.Contains(rev30AEpochs(g), `"reason":"held"`)
			})
			g.settle(t, d)
			if v == "stop" {
				d.stop()
			} else {
				d.kill()
			}
			d = g.e.start() // E still empty
			g.settle(t, d)
			time.Sleep(1500 * time.Millisecond)
			time.Sleep(aud11AGap)
			rev30BGzRotate(t, g.app) // idle: E (empty) → a.log.1.gz, an empty a.log (F)
			time.Sleep(2500 * time.Millisecond)
			g.settle(t, d)
			ep1 := rev30AEpochs(g)
			d.kill()
			n := len(g.lines)
			g.write(t, 7) // F
			f7 := append([]string(nil), g.lines[n:]...)
			time.Sleep(aud11AGap)
			rev30BGzRotate(t, g.app) // F → a.log.1.gz
			g.write(t, 5)            // Z
			d = g.e.start()
			var r *report
			waitUntil(t, "settled with Z", 30*time.Second, func() bool {
				aud11APullAck(t, d, true)
				rep, err := d.status()
				if err != nil || !rep.Settled {
					return false
				}
				r = rep
				return len(rev30CMissing(g, g.lines[len(g.lines)-5:])) == 0
			})
			time.Sleep(300 * time.Millisecond)
			r, _ = statusRaw(t, d)
			f := r.feed(t, "app")
			if miss, tw := rev30CMissing(g, f7), rev30CTwice(g, g.lines); len(miss) > 0 || len(tw) > 0 {
				t.Errorf("F's lines missing %v; lines twice %v; lossless %v lostTails %d; epochs before the kill:\n%s", miss, tw, f.Lossless, f.LostTails, ep1)
			}
		})
	}
}
