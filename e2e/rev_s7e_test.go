package e2e

// Review S7 (rev-e) of r4.diff. Tests named TestRevS7e... are findings:
// each fails on the commit under review; its comment gives the rule, the
// expectation and what the product does.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRevS7eKnownEpochShortFingerprintRewrittenInPlaceLost checks DESIGN
// §2 (every line reaches every subscriber; nothing lost without being
// counted) and §11 catch-up ("a sink ahead of the pointer only skips
// what it holds"). 6353aab lets checkPointer read the file at the path
// under a known later epoch whenever knownEpochBy matched it by a
// fingerprint of any length (fp > 0), where 984aeba required checkLater's
// laterFound (the pointer's grown first bytes, at least the bytes the
// sinks lack). The epochs line's fingerprint is what the file held when
// the pointer moved to it: after a rotation whose new file had one line
// (a header) when tailfeed opened it, that is those few bytes. The file
// rewritten in place (same inode) with the same header then matches the
// epoch by key and those bytes — the very case the code comment names as
// unsafe ("a file truncated or rewritten in place keeps its key").
//
// Steps: E1 (2000 lines) rotated to in.log.1; the new in.log (E2) is
// "HEADER\n" when tailfeed reads it, then 500 lines; stop. The pointer
// file is put back to a copy from E1 and in.log.1 deleted (as
// audPointerPutBack); in.log is truncated and rewritten in place with
// "HEADER\n" and 600 new lines. Expected: every new line lands in both
// postgres tables and in the exactlyOnce file sink (a new epoch:
// duplicates for the old ones at most), or a loss is counted. Observed:
// in.log is read under E2, the sinks holding E2 through its old size skip
// the new lines at those positions as already applied: 500 of the 600 are
// missing from lines, lines2 and other.log. Nothing counts them: the feed
// is lossy only for in.log.1's gone tail (lostTails 1, lostBytes 62895 =
// E1's end minus the put-back pointer's offset; detail names in.log.1's
// generation). At 91ab280 (984aeba's laterFound gate) the same steps read
// in.log under a new epoch and the test passes: a regression of 6353aab.
func TestRevS7eKnownEpochShortFingerprintRewrittenInPlaceLost(t *testing.T) {
	c, e, in := audPgTwoStart(t)
	d, bak, epoch1 := audRunsThenRotates(t, e, in)
	const header = "HEADER\n"
	if err := os.WriteFile(in.path, []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	d.waitFor("the new in.log's header read", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.Pointer.Epoch != epoch1 && f.Pointer.Offset == int64(len(header))
	})
	var old strings.Builder
	for i := range 500 {
		fmt.Fprintf(&old, "e2-old-%04d-%s\n", i, strings.Repeat("o", i%40))
	}
	fh, err := os.OpenFile(in.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(old.String()); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	oldSize := int64(len(header) + old.Len())
	d.waitFor("the new in.log read", 60*time.Second, func(r *report) bool {
		f := r.feed(t, "app")
		return f.Settled && f.Pointer.Epoch != epoch1 && f.Pointer.Offset == oldSize
	})
	d.stop()
	copyFile(t, bak, e.path("state/feeds/app.ptr"))
	if err := os.Remove(in.path + ".1"); err != nil {
		t.Fatal(err)
	}
	// Rewritten in place: the same inode, the same header, new lines.
	var news []string
	var body strings.Builder
	body.WriteString(header)
	for i := range 600 {
		s := fmt.Sprintf("e2-new-%04d-%s", i, strings.Repeat("n", i%40))
		news = append(news, s)
		body.WriteString(s + "\n")
	}
	fh, err = os.OpenFile(in.path, os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(body.String()); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	time.Sleep(2100 * time.Millisecond) // past the generations' mtime slack
	d, _, f := settledRun(t, e)
	log := d.log()
	l1 := pgLines(t, c, "lines")
	l2 := pgLines(t, c, "lines2")
	other, err := os.ReadFile(e.path("other.log"))
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, l := range strings.Split(string(other), "\n") {
		held[l] = true
	}
	miss1, miss2, missOther := 0, 0, 0
	first := ""
	for _, s := range news {
		if l1[s] == 0 {
			miss1++
			if first == "" {
				first = s
			}
		}
		if l2[s] == 0 {
			miss2++
		}
		if !held[s] && !strings.Contains(string(other), s+"\n") {
			missOther++
		}
	}
	if miss1+miss2+missOther > 0 {
		t.Errorf("in.log rewritten in place (same header) after a pointer put back: new lines missing: lines %d, lines2 %d, exactlyOnce other.log %d of %d (first %q); lossless %v; %s; %q",
			miss1, miss2, missOther, len(news), first, f.Lossless, f.lossFacts(), grepLines(log, "epoch it was read under before"))
	}
}

// TestRevS7ePostgresDSNLiteralPasswordSpacedKeyword checks DESIGN §11
// Secrets (README "a DSN holding a literal password is a WARN at start
// naming the key"). libpq and pgconn accept whitespace around a
// keyword's '=' ("host=db password = hunter22" connects with the password
// hunter22). Expected: Settings.PasswordLiteral true (the WARN). Observed:
// 6353aab's literalPassword looks for the text "password=" only, so the
// spaced keyword is never seen: PasswordLiteral false, no WARN for a
// password written in the file. Its parent's keyword scanner trimmed the
// key and skipped the spaces after '=' and caught the first DSN (a
// regression); the second (beside a bare reference, the case 6353aab
// claims to fix) is missed at both.
func TestRevS7ePostgresDSNLiteralPasswordSpacedKeyword(t *testing.T) {
	t.Setenv("TF_REV_PGBASE", "host=db user=t dbname=logs")
	wantPasswordLiteral(t, "'host=db user=t password = hunter22'", "'${TF_REV_PGBASE} password =hunter22'")
}

// TestRevS7eTwoFileSinksThroughLinkWithDotDot checks DESIGN §6 file sink
// "Two file sinks on one path are a config error" (README: the same path
// once the symlinks of both are followed as far as they lead). 6353aab's
// evalExisting follows a link by joining its target to the directory and
// cleaning it lexically (filepath.Join), so a ".." in a target after a
// symlinked component is taken lexically, where the kernel (and
// filepath.EvalSymlinks, the parent's resolver) resolves the component
// first. Here deep/cur -> rel/v1 (a release directory) and logs ->
// deep/cur/../../shared (relative to it: deep/rel/v1/../../shared =
// deep/shared). Sink a writes ./deep/shared/out.log, sink b
// ./logs/out.log: one file. Expected: run exits 2 naming
// processors[1].path. Observed: logs resolves to ./shared (lexically:
// deep/cur/../../shared), the two paths differ and run starts — both sinks
// append to deep/shared/out.log (every line twice). At the parent
// (EvalSymlinks on the existing ancestor) it was refused.
func TestRevS7eTwoFileSinksThroughLinkWithDotDot(t *testing.T) {
	e := twoFileSinksEnv(t, "./deep/shared/out.log", "./logs/out.log")
	for _, dir := range []string{"deep/rel/v1", "deep/shared", "shared"} {
		if err := os.MkdirAll(e.path(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("rel/v1", e.path("deep/cur")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("deep/cur/../../shared", e.path("logs")); err != nil {
		t.Fatal(err)
	}
	if got, err := filepath.EvalSymlinks(e.path("logs")); err != nil || got != filepath.Join(evalDir(t, e.path("deep")), "shared") {
		t.Fatalf("setup: logs resolves to %q (%v), want deep/shared", got, err)
	}
	if err := os.WriteFile(e.path("in.log"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := e.spawn()
	if !exitsWithin(d, 15*time.Second) {
		out := writtenTwice(e.path("deep/shared/out.log"))
		d.kill()
		t.Fatalf("run of two file sinks on ./deep/shared/out.log and ./logs/out.log (logs -> deep/cur/../../shared, deep/cur -> rel/v1) started; want exit 2 naming processors[1].path; deep/shared/out.log holds %q", out)
	}
	wantExit2NamingSecondPath(t, d)
}

func evalDir(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
