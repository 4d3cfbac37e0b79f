package daemon

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
)

// A rejected reload names every problem of the new file at once (DESIGN
// §12 "Reload": "an ERROR with every FILE:LINE: message"), sorted by
// line: the file's own errors, the reload's rules (dataDir cannot change)
// and the checks on the file system (a directory feed path), which ran in
// stages before, each hiding the next.
func TestReloadErrorListsEveryProblem(t *testing.T) {
	e := start(t, reloadBase, Options{})
	e.waitFor("settled", 10*time.Second, settled)
	if err := os.Mkdir(filepath.Join(e.dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	withDir := reloadBase[:strings.Index(reloadBase, "processors:")] +
		"  - {name: d, path: %DIR%/adir}\n" + reloadBase[strings.Index(reloadBase, "processors:"):] +
		"  - {name: archive2, feed: d, type: file, path: %DIR%/out2.log}\n"
	// Line 2: dataDir; line 6: app; line 7: the directory feed d.
	for _, tc := range []struct {
		name  string
		yaml  string
		lines []string // in this order
		not   string
	}{
		{"dataDir change and a directory path", strings.Replace(withDir, "%DIR%/state", "%DIR%/other", 1),
			[]string{"tailfeed.yaml:2: dataDir: cannot change", "tailfeed.yaml:7: feeds[1].path: "}, ""},
		{"a type error and a directory path", strings.Replace(withDir, "queueCapacity: 64", "queueCapacity: abc", 1),
			[]string{"tailfeed.yaml:6: ", "tailfeed.yaml:7: feeds[1].path: "}, ""},
		{"a type error, a dataDir change and a directory path",
			strings.Replace(strings.Replace(withDir, "queueCapacity: 64", "queueCapacity: abc", 1), "%DIR%/state", "%DIR%/other", 1),
			[]string{"tailfeed.yaml:2: dataDir: cannot change", "tailfeed.yaml:6: ", "tailfeed.yaml:7: feeds[1].path: "}, ""},
		// A processor's TLS file that does not load is named by its line
		// (line 9) like at a start, with the file's own problems — not
		// an error of the feed's rebuild without one.
		{"a missing processor TLS file", reloadBase + "  - {name: hook, feed: app, type: webhook, url: \"https://127.0.0.1:9/x\", tls: {caFile: %DIR%/nope.pem}}\n",
			[]string{"tailfeed.yaml:9: processors[1].tls: "}, "feed app"},
		{"a type error and a missing processor TLS file", strings.Replace(reloadBase, "queueCapacity: 64", "queueCapacity: abc", 1) +
			"  - {name: hook, feed: app, type: webhook, url: \"https://127.0.0.1:9/x\", tls: {caFile: %DIR%/nope.pem}}\n",
			[]string{"tailfeed.yaml:6: ", "tailfeed.yaml:9: processors[1].tls: "}, "feed app"},
		// A file sink whose output is a directory, likewise (line 9).
		{"a file output that is a directory", reloadBase + "  - {name: o2, feed: app, type: file, path: %DIR%/adir}\n",
			[]string{"tailfeed.yaml:9: processors[1].path: ", "adir is a directory"}, "feed app"},
		// A dataDir that does not decode is the file's error alone, not
		// also a change (its default is not what the file says).
		{"a dataDir that does not decode", strings.Replace(withDir, "dataDir: %DIR%/state", "dataDir: [x]", 1),
			[]string{"tailfeed.yaml:2: ", "tailfeed.yaml:7: feeds[1].path: "}, "cannot change"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.rewrite(tc.yaml)
			code, body := e.reload()
			if code != http.StatusBadRequest {
				t.Fatalf("reload = %d %s, want 400", code, body)
			}
			at := 0
			for _, want := range tc.lines {
				i := strings.Index(body[at:], want)
				if i < 0 {
					t.Fatalf("the reload error lacks %q after byte %d (every problem, by line):\n%s", want, at, body)
				}
				at += i + len(want)
			}
			if tc.not != "" && strings.Contains(body, tc.not) {
				t.Errorf("the reload error holds %q:\n%s", tc.not, body)
			}
			if c := e.report().Config; c == nil || c.LastError == nil || !strings.Contains(*c.LastError, tc.lines[len(tc.lines)-1]) {
				t.Errorf("config.lastError does not list every problem: %+v", c)
			}
		})
	}
	// The daemon runs on unchanged: a good file still reloads.
	e.rewrite(reloadBase)
	if code, body := e.reload(); code != http.StatusOK {
		t.Fatalf("reload of the running file = %d %s", code, body)
	}
}

// A start names every path problem at once too (exit 2): two feeds whose
// paths are directories are both listed, and the error is the config's.
func TestStartListsEveryPathProblem(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "tailfeed.yaml")
	os.WriteFile(path, []byte("dataDir: "+dir+"/state\nstatus: {listen: \"127.0.0.1:0\"}\nfeeds:\n"+
		"  - {name: a, path: "+dir+"/a}\n  - {name: b, path: "+dir+"/b}\nprocessors:\n"+
		"  - {name: x, feed: a, type: discard}\n  - {name: y, feed: b, type: discard}\n"), 0o600)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, hclog.NewNullLogger())
	if err == nil {
		d.Close()
		t.Fatal("New accepted feed paths that are directories")
	}
	if !errors.Is(err, ErrConfig) {
		t.Errorf("errors.Is(err, ErrConfig) = false: %v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "tailfeed.yaml:4: feeds[0].path: ") || !strings.Contains(msg, "tailfeed.yaml:5: feeds[1].path: ") ||
		strings.Index(msg, ":4:") > strings.Index(msg, ":5:") {
		t.Errorf("the start error does not list both directories by line:\n%s", msg)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "feeds[0].path" {
		t.Errorf("errors.As(*ConfigError) = %+v, want the first problem", ce)
	}
}

// A feed path that is a directory is named at its path key's line, as
// every other FILE:LINE error names its key's (DESIGN §9), not at the
// feed's entry: here line 6, the entry on line 4.
func TestStartNamesADirectoryPathAtItsLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tailfeed.yaml")
	os.WriteFile(path, []byte("dataDir: "+dir+"/state\nstatus: {listen: \"127.0.0.1:0\"}\nfeeds:\n"+
		"  - name: a\n    pollIntervalMillis: 20\n    path: "+dir+"/a\nprocessors:\n"+
		"  - {name: x, feed: a, type: discard}\n"), 0o600)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, hclog.NewNullLogger())
	if err == nil {
		d.Close()
		t.Fatal("New accepted a feed path that is a directory")
	}
	if msg := err.Error(); !strings.Contains(msg, "tailfeed.yaml:6: feeds[0].path: ") {
		t.Errorf("the start error does not name the path key's line (6):\n%s", msg)
	}
}
