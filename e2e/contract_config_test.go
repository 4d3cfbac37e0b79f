package e2e

// DESIGN §7 config and §9 CLI.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// ctDesignConfig is the config block of DESIGN §7 as printed, with the
// listen address and the webhook's URL replaced.
const ctDesignConfig = `dataDir: ./var/state              # LOCK, feeds/<feed>.ptr, dlq/, state/
status: {listen: "{{ADDR}}", token: "", protectRead: false, stallAlertMillis: 60000}
log: {level: info, format: text}  # text | json
shutdownTimeoutMillis: 10000
feeds:
  - name: app                     # [A-Za-z0-9._-]+, unique
    path: ./var/demo/app.log
    readStrategy: COMMITTED       # COMMITED (alias) | EARLIEST | LATEST | ONCE_EARLIEST | ONCE_LATEST
    maxLineBytes: 1048576
    queueCapacity: 1024           # lines per subscriber queue
    queueBytes: 4194304           # bytes per subscriber queue
    maxPendingAcks: 65536
    pollIntervalMillis: 250
    rotateWaitMillis: 5000
    commitSyncMillis: 10
    overload:
      policy: PAUSE               # PAUSE | DROP_AFTER_SPIN | BLOCK_WITH_DEADLINE
      spinBoundMillis: 10
      blockDeadlineMillis: 100
      subscribers: {hook: {policy: DROP_AFTER_SPIN}}   # names a processor below
processors:
  - name: archive                 # unique; also the subscriber queue's name
    feed: app
    type: file                    # file | pull | webhook | count | discard
    match: ""                     # optional RE2; exclude: "" likewise
    path: ./var/out/app.log       # file: output path
    exactlyOnce: false            # file/count: skip re-deliveries by stored (epoch, position)
    fsync: never                  # file: always | interval | never
    fsyncIntervalMillis: 100
    onFailure: hold               # hold | deadLetter
    retry: {initialMillis: 1000, maxMillis: 16000, jitter: 0.2, attempts: 6}
  - name: consumer                # clients poll over HTTP and ACK each delivery
    feed: app
    type: pull
    ackTimeoutMillis: 30000
    maxInFlight: 1000
  - name: hook                    # POSTs batches as NDJSON
    feed: app
    type: webhook
    url: {{URL}}/ingest
    timeoutMillis: 5000
    batchMaxLines: 500
    batchMaxBytes: 1048576
    headers: {X-Source: tailfeed}
`

// TestContractDesignConfig runs the config of §7 as printed, from another
// working directory: every key is accepted, relative paths resolve against
// the config file, and a line reaches the file sink, the pull client and
// the best-effort webhook.
func TestContractDesignConfig(t *testing.T) {
	h := newHook(t)
	e := newEnv(t, strings.Replace(ctDesignConfig, "{{URL}}", h.srv.URL, 1))
	if _, errOut, code := cli(t, "validate", "--config", e.cfgWith(freeAddr(t))); code != 0 {
		t.Fatalf("validate of DESIGN §7's config: exit %d: %s", code, errOut)
	}
	os.MkdirAll(e.path("var/demo"), 0o755)
	os.WriteFile(e.path("var/demo/app.log"), nil, 0o644)
	d := e.startIn(t.TempDir())
	s := sample(t, d, "hook")
	appendTo(t, e.path("var/demo/app.log"), "hello\n")
	code, _, body := request(t, d, "GET", "/v1/pull/consumer?wait=5s", "", nil)
	var p struct{ Events []event }
	if json.Unmarshal(body, &p); code != 200 || len(p.Events) != 1 || p.Events[0].Line != "hello" {
		t.Fatalf("pull without a token configured: %d %s", code, body)
	}
	expectCode(t, d, "POST", "/v1/ack", "", mustJSON(map[string]string{"deliveryId": p.Events[0].DeliveryID}), 200)
	r := waitReport(t, d, "settled", 30*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Sequence == 1 })
	f := r.Feeds[0]
	var queues []string
	for _, sub := range f.Subscribers {
		queues = append(queues, sub.Queue)
	}
	sort.Strings(queues)
	if f.Policy != "PAUSE" || strings.Join(queues, ",") != "archive,consumer,hook" || f.Pointer == nil || f.Path != e.path("var/demo/app.log") {
		t.Errorf("policy %s subscribers %v pointer %v path %s", f.Policy, queues, f.Pointer, f.Path)
	}
	if b, _ := os.ReadFile(e.path("var/out/app.log")); string(b) != "hello\n" {
		t.Errorf("var/out/app.log next to the config holds %q", b)
	}
	for _, p := range []string{"var/state/LOCK", "var/state/feeds/app.ptr"} {
		if _, err := os.Stat(e.path(p)); err != nil {
			t.Errorf("%s is not under the config's directory: %v", p, err)
		}
	}
	waitUntil(t, "the webhook got the line", 20*time.Second, func() bool { return len(h.linesAt("/ingest")) == 1 })
	h.mu.Lock()
	if hdr := h.reqs[0].header.Get("X-Source"); hdr != "tailfeed" {
		t.Errorf("webhook header X-Source %q", hdr)
	}
	h.mu.Unlock()
	s.finish()
	d.stop()
}

// TestContractDefaults: a config with the required keys only takes the
// defaults of §7: dataDir ./var/state next to the config, COMMITTED,
// PAUSE, maxLineBytes 1 MiB.
func TestContractDefaults(t *testing.T) {
	e := newEnv(t, `status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
processors:
  - name: out
    feed: app
    type: file
    path: ./out.log
`)
	long := strings.Repeat("x", 1<<20)
	os.WriteFile(e.path("in.log"), []byte(long+"tail!\nshort\n"), 0o644)
	d := e.startIn(t.TempDir())
	r := waitReport(t, d, "settled", 30*time.Second, func(r *report) bool { return r.Settled && r.Feeds[0].Sequence == 3 })
	f := r.Feeds[0]
	if f.Oversized != 1 || f.Pointer == nil || f.Policy != "PAUSE" || f.Bounded {
		t.Errorf("oversized %d pointer %v policy %s bounded %v; want 1 (1 MiB limit), a pointer (COMMITTED), PAUSE, false", f.Oversized, f.Pointer, f.Policy, f.Bounded)
	}
	d.stop()
	if b, _ := os.ReadFile(e.path("out.log")); string(b) != long+"\ntail!\nshort\n" {
		t.Errorf("output of %d bytes, want the 1 MiB piece, the rest and short", len(b))
	}
	if _, err := os.Stat(e.path("var/state/feeds/app.ptr")); err != nil {
		t.Errorf("default dataDir ./var/state next to the config: %v", err)
	}
}

// TestContractConfigErrors: more rejections with FILE:LINE (§7), several
// errors reported at once one per line (§9), and the COMMITED alias.
func TestContractConfigErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, doc, want string }{
		{"feed name characters", strings.Replace(brokenBase, "  - name: app\n", "  - name: app/x #!\n", 1), "app/x"},
		{"bad log format", strings.Replace(brokenBase, "level: info", "level: info\n  format: xml #!", 1), `"xml"`},
		{"unknown status key", strings.Replace(brokenBase, "  listen: 127.0.0.1:1", "  listen: 127.0.0.1:1\n  protectReed: true #!", 1), "protectReed"},
		{"unknown retry key", brokenBase + "    retry:\n      tries: 3 #!\n", "tries"},
		{"bad onFailure", brokenBase + "    onFailure: ignore #!\n", `"ignore"`},
		{"bad retry type", brokenBase + "    retry:\n      jitter: lots #!\n", "jitter"},
		{"bad header map", brokenBase + "  - name: h\n    feed: app\n    type: webhook\n    url: http://127.0.0.1:1/\n    headers: [a] #!\n", "headers"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("c%d.yaml", i))
			os.WriteFile(path, []byte(tc.doc), 0o644)
			loc := fmt.Sprintf("%s:%d: ", path, markedLine(t, tc.doc))
			_, stderr, code := cli(t, "validate", "--config", path)
			if code != 2 || !hasLine(stderr, func(l string) bool { return strings.HasPrefix(l, loc) && strings.Contains(l, tc.want) }) {
				t.Errorf("exit %d, stderr %q; want 2 and a line %q…%q", code, stderr, loc, tc.want)
			}
		})
	}
	t.Run("several errors, one per line", func(t *testing.T) {
		doc := strings.Replace(brokenBase, "readStrategy: COMMITTED", "readStrategy: NEVER", 1) +
			"    fsync: sometimes\n  - name: b\n    feed: nope\n    type: discard\n"
		path := filepath.Join(dir, "several.yaml")
		os.WriteFile(path, []byte(doc), 0o644)
		_, stderr, code := cli(t, "validate", "--config", path)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		at := regexp.MustCompile("^" + regexp.QuoteMeta(path) + `:[0-9]+: `)
		n := 0
		for _, l := range lines {
			if at.MatchString(l) {
				n++
			}
		}
		if code != 2 || n < 3 {
			t.Errorf("exit %d, %d FILE:LINE lines, want 2 and one line for each of the 3 errors:\n%s", code, n, stderr)
		}
	})
	t.Run("FILE is the config as named, for dataDir errors too", func(t *testing.T) {
		// Run from the config's directory with a relative --config: every
		// message names the file the same way, "c.yaml:LINE: …".
		sub := t.TempDir()
		os.WriteFile(filepath.Join(sub, "blocker"), []byte("x"), 0o644)
		for name, doc := range map[string]string{
			"enum.yaml":    strings.Replace(brokenBase, "readStrategy: COMMITTED", "readStrategy: NEVER", 1),
			"datadir.yaml": strings.Replace(brokenBase, "dataDir: ./state", "dataDir: ./blocker/state", 1),
		} {
			os.WriteFile(filepath.Join(sub, name), []byte(doc), 0o644)
			for _, cmd := range []string{"validate", "run"} {
				c := exec.Command(bin, cmd, "--config", name)
				c.Dir = sub
				var stderr bytes.Buffer
				c.Stderr = &stderr
				err := c.Run()
				if cmd == "validate" && name == "datadir.yaml" {
					if code := exitCode(err); code != 0 {
						t.Errorf("validate of a config whose dataDir cannot be created: exit %d, want 0 (it checks the file only): %s", code, stderr.String())
					}
					continue
				}
				if code := exitCode(err); code != 2 || !strings.HasPrefix(stderr.String(), name+":") {
					t.Errorf("%s --config %s: exit %d, stderr %q; want 2 and %q", cmd, name, code, stderr.String(), name+":LINE: …")
				}
			}
		}
	})
	t.Run("COMMITED alias", func(t *testing.T) {
		path := filepath.Join(dir, "alias.yaml")
		os.WriteFile(path, []byte(strings.Replace(brokenBase, "COMMITTED", "COMMITED", 1)), 0o644)
		if _, stderr, code := cli(t, "validate", "--config", path); code != 0 {
			t.Errorf("COMMITED: exit %d: %s", code, stderr)
		}
	})
}
