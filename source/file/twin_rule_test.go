package file_test

import (
	"testing"
	"time"

	"tailfeed/source/file"
)

// A .gz is left out of the generations only for its plain twin — the file
// of its name holding every first byte the .gz has — and only when that
// twin is read instead (a generation name). Before the twenty-fifth
// session any file of its name left it out (review 24d B, D): the
// pointer's own file compressed beside a later generation of its name was
// counted lost, never read.

// The pointer's file rotated and compressed (app.log.1.gz), then, with
// delaycompress switched on, the next generation rotated to a plain
// app.log.1 beside it: not its twin. The restart reads the .gz from the
// pointer, then app.log.1, then the new app.log: nothing lost.
func TestRestartGzBesideAnotherGenerationOfItsNameIsRead(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", rigOpts{strategy: file.Committed})
	e1 := firstRun(t, r, 50)

	rev25GzThenPlainOfItsName(t, r.path) // the pointer's file: app.log.1.gz; then a plain app.log.1
	ends := lineEnds(t, r.path+".1")
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := rev25Restart(t, r, rigOpts{strategy: file.Committed}, 60)
	time.Sleep(200 * time.Millisecond)
	expectRuns(t, r2.rec.all(), e1,
		run{numbered("a", 50, 20), nil},
		run{numbered("m", 0, 30), ends},
		run{numbered("b", 0, 10), lineEnds(t, r.path)})
	if n := r2.src.LostTails(); n != 0 {
		t.Fatalf("lostTails %d, want 0", n)
	}
}

// rotatedNames naming only the compressed generations: the pointer's file
// rotated and compressed (app.log.2.gz), a later generation being
// compressed at the restart (app.log.1.gz whole, its plain twin app.log.1
// still beside it, as gzip -k leaves it). The later generation is read
// from its .gz: the twin is no generation name, nobody reads it.
func TestRestartGzWhoseTwinIsNoGenerationNameIsRead(t *testing.T) {
	t.Parallel()
	o := rigOpts{strategy: file.Committed, rotated: []string{"app.log.*.gz"}}
	r := newRig(t, "", o)
	e1 := firstRun(t, r, 50)

	appendTo(t, r.path, numbered("a", 50, 20)...)
	mustRename(t, r.path, r.path+".2")
	gzipFile(t, r.path+".2")
	appendTo(t, r.path, numbered("m", 0, 30)...)
	mustRename(t, r.path, r.path+".1")
	gzipKeep(t, r.path+".1", r.path+".1.gz")
	appendTo(t, r.path, numbered("b", 0, 10)...)

	r2 := rev25Restart(t, r, o, 60)
	time.Sleep(200 * time.Millisecond)
	expectRuns(t, r2.rec.all(), e1,
		run{numbered("a", 50, 20), nil},
		run{numbered("m", 0, 30), nil},
		run{numbered("b", 0, 10), lineEnds(t, r.path)})
	if n := r2.src.LostTails(); n != 0 {
		t.Fatalf("lostTails %d, want 0", n)
	}
}
