package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// brokenBase is a valid config; each case in TestValidateBrokenConfigs
// appends lines to it. The line marked "#!" is where the error must be
// reported.
const brokenBase = `dataDir: ./state
status:
  listen: 127.0.0.1:1
log:
  level: info
feeds:
  - name: app
    path: ./in.log
    readStrategy: COMMITTED
    queueCapacity: 8
processors:
  - name: archive
    feed: app
    type: file
    path: ./out.log
`

// feedBase is brokenBase cut after the feed, for cases that add feed keys.
var feedBase = brokenBase[:strings.Index(brokenBase, "processors:")]

// markedLine returns the 1-based line that holds the marker "#!".
func markedLine(t *testing.T, doc string) int {
	t.Helper()
	for i, l := range strings.Split(doc, "\n") {
		if strings.Contains(l, "#!") {
			return i + 1
		}
	}
	t.Fatalf("no #! marker in\n%s", doc)
	return 0
}

// TestValidateBrokenConfigs: `validate` and `run` reject each broken config
// with exit 2 and a "FILE:LINE: message" naming the line at fault (DESIGN §9).
func TestValidateBrokenConfigs(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string // in the message
	}{
		{"unknown key", feedBase + "    queueCapacty: 5 #!\n", `unknown key "queueCapacty"`},
		{"wrong type", feedBase + "    queueBytes: lots #!\n", "must be an integer"},
		{"wrong type bool", brokenBase + "    exactlyOnce: maybe #!\n", "exactlyOnce"},
		{"bad enum", brokenBase + "    fsync: sometimes #!\n", `"sometimes"`},
		{"bad log level", strings.Replace(brokenBase, "level: info", "level: loud #!", 1), `"loud"`},
		{"duplicate processor name", brokenBase + "  - name: archive #!\n    feed: app\n    type: discard\n", `"archive"`},
		{"duplicate feed name", strings.Replace(brokenBase, "processors:", "  - name: app #!\n    path: ./other.log\nprocessors:", 1), `"app"`},
		{"dangling feed reference", brokenBase + "  - name: b\n    feed: nope #!\n    type: discard\n", `"nope"`},
		{"dangling subscriber override", feedBase + "    overload:\n      subscribers:\n        ghost: {policy: DROP_AFTER_SPIN} #!\n" + brokenBase[len(feedBase):], "ghost"},
		{"bad regex", brokenBase + "    match: \"a(b\" #!\n", "match"},
		{"bad exclude regex", brokenBase + "    exclude: \"[z-a]\" #!\n", "exclude"},
		{"non-positive size", feedBase + "    queueBytes: 0 #!\n", "must be positive"},
		{"negative size", feedBase + "    maxLineBytes: -5 #!\n", "maxLineBytes"},
		{"two file sinks on one path", brokenBase + "  - name: b\n    feed: app\n    type: file\n    path: ./out.log #!\n", "out.log"},
		{"bad readStrategy", strings.Replace(brokenBase, "readStrategy: COMMITTED", "readStrategy: SOMETIMES #!", 1), "SOMETIMES"},
		{"bad YAML syntax", strings.Replace(brokenBase, "path: ./in.log", "path: ./in.log: x #!", 1), "YAML"},
		{"unknown key under overload", feedBase + "    overload:\n      polcy: PAUSE #!\n", `unknown key "polcy"`},
		{"bad overload policy", feedBase + "    overload:\n      policy: SHED #!\n", `"SHED"`},
		{"feed no processor reads", strings.Replace(brokenBase, "processors:", "  - name: orphan #!\n    path: ./orphan.log\nprocessors:", 1), `no processor reads feed "orphan"`},
		{"bad processor type", brokenBase + "  - name: b\n    feed: app\n    type: kinesis #!\n", `"kinesis"`},
	}
	dir := t.TempDir()
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("broken-%02d.yaml", i))
			if err := os.WriteFile(path, []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			loc := fmt.Sprintf("%s:%d: ", path, markedLine(t, tc.doc))
			for _, cmd := range []string{"validate", "run"} {
				_, stderr, code := cli(t, cmd, "--config", path)
				if code != 2 {
					t.Errorf("%s: exit %d, want 2; stderr %q", cmd, code, stderr)
				}
				if !hasLine(stderr, func(l string) bool { return strings.HasPrefix(l, loc) && strings.Contains(l, tc.want) }) {
					t.Errorf("%s: stderr has no line %q…%q:\n%s", cmd, loc, tc.want, stderr)
				}
			}
		})
	}
	t.Run("valid base", func(t *testing.T) {
		path := filepath.Join(dir, "base.yaml")
		os.WriteFile(path, []byte(brokenBase), 0o644)
		if out, stderr, code := cli(t, "validate", "--config", path); code != 0 {
			t.Errorf("validate of the base config: exit %d: %s%s", code, out, stderr)
		}
	})
}

func hasLine(s string, ok func(string) bool) bool {
	for _, l := range strings.Split(s, "\n") {
		if ok(l) {
			return true
		}
	}
	return false
}

// TestMissingConfigFile: a missing file is exit 2 with "FILE: message", no line.
func TestMissingConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	for _, cmd := range []string{"validate", "run"} {
		_, stderr, code := cli(t, cmd, "--config", path)
		if code != 2 || !strings.HasPrefix(stderr, path+": ") {
			t.Errorf("%s on a missing file: exit %d, stderr %q; want 2 and %q", cmd, code, stderr, path+": …")
		}
	}
}

// TestRunDataDirCannotBeCreated: a dataDir under a regular file is the
// config's fault: exit 2 with "FILE:LINE: dataDir: …".
func TestRunDataDirCannotBeCreated(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "blocker"), []byte("x"), 0o644)
	path := filepath.Join(dir, "c.yaml")
	doc := strings.Replace(brokenBase, "dataDir: ./state", "dataDir: ./blocker/state", 1)
	os.WriteFile(path, []byte(doc), 0o644)
	_, stderr, code := cli(t, "run", "--config", path)
	if code != 2 || !strings.Contains(stderr, path+":1: dataDir:") {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, path+":1: dataDir: …")
	}
}

// TestSecondDaemonOnSameDataDir: the second daemon fails fast with exit 1
// and names the first one's pid (DESIGN §3 ownership).
func TestSecondDaemonOnSameDataDir(t *testing.T) {
	e := newEnv(t, strings.Replace(brokenBase, "127.0.0.1:1", addrPlaceholder, 1))
	d := e.start()
	second := e.path("second.yaml")
	doc := strings.Replace(brokenBase, "127.0.0.1:1", freeAddr(t), 1)
	doc = strings.Replace(doc, "path: ./out.log", "path: ./out2.log", 1)
	os.WriteFile(second, []byte(doc), 0o644)
	_, stderr, code := cli(t, "run", "--config", second)
	want := fmt.Sprintf("locked by pid %d", d.pid())
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("second daemon: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	d.stop()
}

// TestRunPortInUse: a taken status port is a runtime failure: exit 1.
func TestRunPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	os.WriteFile(path, []byte(strings.Replace(brokenBase, "127.0.0.1:1", ln.Addr().String(), 1)), 0o644)
	_, stderr, code := cli(t, "run", "--config", path)
	if code != 1 || !strings.Contains(stderr, ln.Addr().String()) {
		t.Errorf("exit %d, stderr %q; want 1 naming %s", code, stderr, ln.Addr())
	}
	// The failed start released the data dir: a daemon can run on it now.
	e := newEnv(t, strings.Replace(brokenBase, "127.0.0.1:1", addrPlaceholder, 1))
	e.dir = dir
	e.cfg = path
	e.start().stop()
}

// pointerKeys is the order `pointer show` prints (DESIGN §9).
var pointerKeys = []string{"offset", "epoch", "fileKey", "fingerprintLength", "fingerprint", "commits", "slot", "layout"}

// TestPointerShow: `pointer show FILE` prints the eight keys as "key: value"
// lines, hex ids as 16 lowercase digits, the rest decimal; --json prints the
// same keys and values as one object; garbage and short files exit 1.
func TestPointerShow(t *testing.T) {
	e := newEnv(t, committedConfig)
	in := newInput(t, e.path("in.log"))
	in.appendLines(300)
	d := e.start()
	d.waitSettled(60 * time.Second)
	d.stop()
	ptr := e.path("state/feeds/app.ptr")

	stdout, stderr, code := cli(t, "pointer", "show", ptr)
	if code != 0 {
		t.Fatalf("pointer show: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if len(lines) != len(pointerKeys) {
		t.Fatalf("pointer show printed %d lines, want %d:\n%s", len(lines), len(pointerKeys), stdout)
	}
	text := map[string]string{}
	for i, l := range lines {
		k, v, ok := strings.Cut(l, ": ")
		if !ok || k != pointerKeys[i] {
			t.Errorf("line %d is %q, want %q: VALUE", i+1, l, pointerKeys[i])
		}
		text[k] = v
	}
	hex16 := regexp.MustCompile(`^[0-9a-f]{16}$`)
	dec := regexp.MustCompile(`^(0|[1-9][0-9]*)$`)
	for k, v := range text {
		switch k {
		case "epoch", "fileKey", "fingerprint":
			if !hex16.MatchString(v) {
				t.Errorf("%s %q is not 16 lowercase hex digits", k, v)
			}
		case "slot":
			if v != "A" && v != "B" {
				t.Errorf("slot %q, want A or B", v)
			}
		default:
			if !dec.MatchString(v) {
				t.Errorf("%s %q is not decimal", k, v)
			}
		}
	}
	if want := strconv.FormatInt(in.size(), 10); text["offset"] != want {
		t.Errorf("offset %s, want the input size %s after a settled stop", text["offset"], want)
	}
	if want := strconv.FormatInt(min(in.size(), 4096), 10); text["fingerprintLength"] != want {
		t.Errorf("fingerprintLength %s, want %s", text["fingerprintLength"], want)
	}
	if text["layout"] != "1" || text["epoch"] == "0000000000000000" {
		t.Errorf("layout %s epoch %s, want layout 1 and a non-zero epoch", text["layout"], text["epoch"])
	}

	stdout, stderr, code = cli(t, "pointer", "show", "--json", ptr)
	if code != 0 {
		t.Fatalf("pointer show --json: exit %d: %s", code, stderr)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
		t.Fatalf("--json: %v: %s", err, stdout)
	}
	if len(obj) != len(pointerKeys) {
		t.Errorf("--json has %d keys, want %d: %s", len(obj), len(pointerKeys), stdout)
	}
	for _, k := range pointerKeys {
		v, ok := obj[k]
		if !ok {
			t.Errorf("--json lacks %q: %s", k, stdout)
			continue
		}
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case float64:
			s = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			t.Errorf("--json %s is %T", k, v)
		}
		if s != text[k] {
			t.Errorf("--json %s = %q, text says %q", k, s, text[k])
		}
	}

	// The flag may also come after the file.
	if out2, _, code := cli(t, "pointer", "show", ptr, "--json"); code != 0 || out2 != stdout {
		t.Errorf("pointer show FILE --json: exit %d, output %q, want %q", code, out2, stdout)
	}

	dir := t.TempDir()
	garbage := make([]byte, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	for name, data := range map[string][]byte{"garbage": garbage, "short": []byte("TFPTR"), "zeros": make([]byte, 1024)} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, data, 0o644)
		for _, args := range [][]string{{"pointer", "show", path}, {"pointer", "show", "--json", path}} {
			out, stderr, code := cli(t, args...)
			if code != 1 || stderr == "" || out != "" {
				t.Errorf("%s on %s: exit %d, stdout %q, stderr %q; want 1 with the reason on stderr", strings.Join(args[:len(args)-1], " "), name, code, out, stderr)
			}
		}
	}
	if _, _, code := cli(t, "pointer", "show", filepath.Join(dir, "missing")); code != 1 {
		t.Errorf("pointer show on a missing file: exit %d, want 1", code)
	}
}

// TestVersion: `version` exits 0 and prints the version.
func TestVersion(t *testing.T) {
	out, stderr, code := cli(t, "version")
	if code != 0 || !strings.HasPrefix(out, "tailfeed ") {
		t.Errorf("version: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// TestStatusUnreachable: `status` exits 2 when nothing answers or what
// answers is not a feed.status report.
func TestStatusUnreachable(t *testing.T) {
	if _, stderr, code := cli(t, "status", "--addr", freeAddr(t)); code != 2 {
		t.Errorf("status on a closed port: exit %d, want 2: %s", code, stderr)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"hello":"world"}`))
	}))
	defer srv.Close()
	if _, stderr, code := cli(t, "status", "--addr", srv.URL); code != 2 {
		t.Errorf("status on a non-report: exit %d, want 2: %s", code, stderr)
	}
}
