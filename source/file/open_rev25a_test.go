//go:build openfindings

package file_test

// Review 25a, finding E: parked in the twenty-fifth session, the design
// question of review 24d C (open_rev24d_internal_test.go) for a .gz: a
// twin is told by its first bytes only, so a generation holding nothing
// but a header every generation starts with is taken for the compressed
// twin of the next one (go test -tags openfindings -run 'TestRev25ARE'
// ./source/file). Older than the session's change (the parent left any
// .gz with a file of its name out).

import (
	"testing"
	"time"

	"tailfeed/source/file"
)

// E (OLDER: the parent left any .gz with a file of its name out; left by
// this change; a silent loss): every generation begins with the same
// header line (a CSV header, a banner written at open). The pointer's file
// rotated to app.log.2; a later generation L that got nothing but its
// header before it was rotated (an idle hour) compressed to app.log.1.gz;
// then, with compress switched off, the next generation M (the header and
// 30 "m" lines) rotated to a plain app.log.1 beside it. gzTwin takes M for
// L's twin: M holds every byte L's .gz decompresses to (its only line). L
// is left out, M read: L's header line is neither delivered nor counted.
// (A twin can be told from another generation only by more than its first
// bytes; review 24d C is the same question for a pointer.)
func TestRev25AREHeaderOnlyGzBesideALaterPlainWithTheHeaderSilentlyLost(t *testing.T) {
	t.Parallel()
	const hdr = "time,level,msg"
	o := rigOpts{strategy: file.Committed}
	r := newRig(t, "", o)
	e1 := firstRun(t, r, 50)

	appendTo(t, r.path, numbered("a", 50, 20)...)
	mustRename(t, r.path, r.path+".2")
	appendTo(t, r.path, hdr) // L: its header only
	mustRename(t, r.path, r.path+".1")
	gzipFile(t, r.path+".1")
	appendTo(t, r.path, append([]string{hdr}, numbered("m", 0, 30)...)...) // M
	time.Sleep(20 * time.Millisecond)
	mustRename(t, r.path, r.path+".1") // plain, beside L's .gz
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := rev25Restart(t, r, o, 61)
	time.Sleep(300 * time.Millisecond)
	gs := r2.rec.all()
	if n := counts(gs)[hdr]; n != 2 && r2.src.LostTails() == 0 {
		t.Fatalf("the header line delivered %d times, want 2 (L's and M's), or L counted lost (lostTails %d %q): L's .gz taken for M's twin", n, r2.src.LostTails(), r2.src.Detail())
	}
	expectRuns(t, gs, e1,
		run{numbered("a", 50, 20), nil},
		run{[]string{hdr}, nil},
		run{append([]string{hdr}, numbered("m", 0, 30)...), nil},
		run{numbered("b", 0, 10), nil})
}
