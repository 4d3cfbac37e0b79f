package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
)

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// untimed drops each line's leading timestamp.
func untimed(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		_, rest, _ := strings.Cut(l, " ")
		out = append(out, rest)
	}
	return out
}

// The run logger writes what hclog.New with the same options writes, and
// a reload's log section (DESIGN §12: applied without a restart) changes
// the level and format of it and of every logger derived from it before
// the change (Named, With), from the next line on.
func TestLoggerSwitchesLevelAndFormat(t *testing.T) {
	var got, want lockedBuf
	log, setLog := newLogger(&got, config.Log{Level: "info", Format: "text"})
	plain := hclog.New(&hclog.LoggerOptions{Name: "tailfeed", Level: hclog.Info, Output: &want})
	for _, l := range []hclog.Logger{log, plain} {
		l.Info("started", "feeds", 2)
		l.Named("app").With("feed", "app").Warn("stalled", "detail", "a b")
		l.Debug("not shown")
	}
	if g, w := untimed(got.String()), untimed(want.String()); fmt.Sprint(g) != fmt.Sprint(w) {
		t.Fatalf("text lines:\n%q\nwant hclog.New's:\n%q", g, w)
	}
	if log.IsDebug() {
		t.Fatal("IsDebug at level info")
	}

	derived := log.Named("app").With("feed", "app")
	before := len(got.String())
	setLog(config.Log{Level: "debug", Format: "json"})
	log.Info("reloaded")
	derived.Debug("polled", "n", 3)
	lines := strings.Split(strings.TrimSpace(got.String()[before:]), "\n")
	if len(lines) != 2 {
		t.Fatalf("after the switch to debug/json, %d lines, want 2: %q", len(lines), lines)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &obj); err != nil {
		t.Fatalf("after the switch to json, a derived logger's line is not JSON: %q", lines[1])
	}
	if obj["@module"] != "tailfeed.app" || obj["feed"] != "app" || obj["@level"] != "debug" || obj["n"] != float64(3) {
		t.Errorf("derived logger's JSON line: %v", obj)
	}
	if !log.IsDebug() || !derived.IsDebug() {
		t.Error("IsDebug false after the switch to debug")
	}

	before = len(got.String())
	setLog(config.Log{Level: "warn", Format: "text"})
	derived.Info("hidden")
	derived.Warn("shown")
	if l := untimed(got.String()[before:]); len(l) != 1 || l[0] != "[WARN]  tailfeed.app: shown: feed=app" {
		t.Errorf("after the switch to warn/text: %q", l)
	}
}

// Lines logged while a reload switches the format are each whole, in one
// format or the other (run with -race).
func TestLoggerSwitchWhileLogging(t *testing.T) {
	var got lockedBuf
	log, setLog := newLogger(&got, config.Log{Level: "info", Format: "text"})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := log.Named(fmt.Sprint("g", g))
			for i := range 200 {
				l.Info("line", "i", i)
			}
		}()
	}
	for i := range 50 {
		setLog(config.Log{Level: "info", Format: []string{"json", "text"}[i%2]})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(got.String()), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, l := range lines {
		var obj map[string]any
		if json.Unmarshal([]byte(l), &obj) != nil && !strings.Contains(l, "[INFO]  tailfeed.g") {
			t.Fatalf("torn or unknown line: %q", l)
		}
	}
}
