package e2e

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"testing"
)

// TestOnceLineFastEqualsJSON: the harness's fast parse of a json sink
// line gives what encoding/json gives, or declines (false) and leaves the
// line to it; checked on the sink's own layout, on lines it must decline
// (escapes, non-ASCII, another key order, odd numbers) and on random
// mutations of a sink line.
func TestOnceLineFastEqualsJSON(t *testing.T) {
	base := `{"id":"app:5e9783c04d7210b8:9","feed":"app","epoch":"5e9783c04d7210b8","position":9,"path":"/tmp/x/logs/f0000.log","line":"f0000 #0"}`
	lines := []string{
		base,
		`{"id":"a","feed":"b","epoch":"c","position":0,"path":"","line":""}`,
		`{"id":"a","feed":"b","epoch":"c","position":123456789012345678,"path":"p","line":"x"}`,
		`{"id":"a","feed":"b","epoch":"c","position":1234567890123456789,"path":"p","line":"x"}`,
		`{"id":"a","feed":"b","epoch":"c","position":012,"path":"p","line":"x"}`,
		`{"id":"a","feed":"b","epoch":"c","position":-1,"path":"p","line":"x"}`,
		`{"id":"a","feed":"b","epoch":"c","position":1,"path":"p","line":"tab\there"}`,
		`{"id":"a","feed":"b","epoch":"c","position":1,"path":"p","line":"é"}`,
		`{"feed":"b","id":"a","epoch":"c","position":1,"path":"p","line":"x"}`,
		`{"id":"a","feed":"b","epoch":"c","position":1,"path":"p","line":"x","more":1}`,
		`{"id":"a","feed":"b","epoch":"c","position":1,"path":"p","line":"x"} `,
	}
	wantFast := []bool{true, true, true, false, false, false, false, false, false, false, false}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`{}":,\ 0123456789abcé` + "\x00\xff")
	for range 20000 {
		b := []byte(base)
		for range 1 + rng.IntN(3) {
			b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
		}
		lines = append(lines, string(b))
	}
	fast := 0
	for i, l := range lines {
		got, ok := onceLineFast(l)
		if i < len(wantFast) && ok != wantFast[i] {
			t.Errorf("%s: fast %v, want %v", l, ok, wantFast[i])
		}
		if !ok {
			continue
		}
		fast++
		var want aud11AObj
		if err := json.Unmarshal([]byte(l), &want); err != nil {
			t.Errorf("%q: fast parse took a line encoding/json refuses (%v): %+v", l, err, got)
		} else if got != want {
			t.Errorf("%q: fast %+v, encoding/json %+v", l, got, want)
		}
	}
	if fast < 1000 {
		t.Errorf("only %d of %d lines took the fast path", fast, len(lines))
	}
}

// TestAppendedWaits: the harness's waits on a growing sink see text split
// across two appends, count only complete lines, and start over when the
// file shrank (a sink cut back at a restart).
func TestAppendedWaits(t *testing.T) {
	p := t.TempDir() + "/out"
	holds, over := appendedHolds(p, `"line":"z #0"`), appendedLinesOver(p, 2)
	if holds() || over() {
		t.Fatal("true before the file exists")
	}
	appendTo(t, p, `{"line":"a"}`+"\n"+`{"line":"z`)
	if holds() || over() {
		t.Fatal("true on half of the text / one line")
	}
	appendTo(t, p, ` #0"}`+"\n")
	if !holds() {
		t.Fatal("text split across two appends not seen")
	}
	if over() {
		t.Fatal("two lines counted as more than two")
	}
	appendTo(t, p, `{"line":"b"}`+"\n")
	if !over() {
		t.Fatal("three lines not counted")
	}
	if holds() {
		t.Fatal("the same text seen again with nothing new")
	}
	if err := os.WriteFile(p, []byte(`{"line":"z #0"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !holds() || over() {
		t.Fatal("a shrunk file not read again from its start")
	}
}
