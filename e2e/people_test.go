package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runSplit runs the binary on cfg with its standard output and standard
// error in separate files, until stop is called (SIGTERM, exit 0 required).
func runSplit(t *testing.T, dir, cfg string) (stdout, stderr func() string, stop func()) {
	t.Helper()
	outPath, errPath := filepath.Join(dir, "stdout"), filepath.Join(dir, "stderr")
	outF, _ := os.Create(outPath)
	errF, _ := os.Create(errPath)
	cmd := exec.Command(bin, "run", "--config", cfg)
	cmd.Stdout, cmd.Stderr = outF, errF
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); outF.Close(); errF.Close() }()
	read := func(p string) func() string {
		return func() string { b, _ := os.ReadFile(p); return string(b) }
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("exit after SIGTERM: %v\n%s", err, read(errPath)())
			}
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatal("no exit 60 s after SIGTERM")
		}
	}
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			<-done
		}
	})
	return read(outPath), read(errPath), stop
}

// TestStdoutSinkAndJSONFormat: a `stdout` processor writes each line and
// '\n' to standard output (the daemon's log goes to standard error), and
// `format: json` writes the webhook's NDJSON object per line, on stdout
// and in a file sink (with exactlyOnce: its record covers the JSON bytes,
// so a restart neither repeats nor drops an object).
func TestStdoutSinkAndJSONFormat(t *testing.T) {
	for _, format := range []string{"raw", "json"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			input := filepath.Join(dir, "app.log")
			cfg := filepath.Join(dir, "tailfeed.yaml")
			os.WriteFile(cfg, []byte(fmt.Sprintf(`dataDir: ./state
status: {listen: "%s"}
feeds:
  - {name: app, path: ./app.log}
processors:
  - {name: out, feed: app, type: stdout, format: %s}
  - {name: js, feed: app, type: file, path: ./out.jsonl, format: json, exactlyOnce: true}
`, freeAddr(t), format)), 0o600)
			appendTo(t, input, "hello <world>\n\"quoted\" \xff\n")
			stdout, stderr, stop := runSplit(t, dir, cfg)
			want := "hello <world>\n\"quoted\" \xff\n"
			objs := []map[string]any{
				{"id": "", "feed": "app", "position": 14.0, "path": input, "line": "hello <world>"},
				{"id": "", "feed": "app", "position": 25.0, "path": input, "line": "\"quoted\" \ufffd"},
			}
			jsonOK := func(text string, n int) string {
				ls := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
				if len(ls) != n || !strings.HasSuffix(text, "\n") {
					return fmt.Sprintf("%d lines, want %d", len(ls), n)
				}
				for i, l := range ls {
					var o map[string]any
					if err := json.Unmarshal([]byte(l), &o); err != nil {
						return err.Error()
					}
					w := objs[i]
					epoch, _ := o["epoch"].(string)
					if len(epoch) != 16 || o["id"] != fmt.Sprintf("app:%s:%v", epoch, w["position"]) ||
						o["feed"] != w["feed"] || o["position"] != w["position"] || o["path"] != w["path"] || o["line"] != w["line"] || len(o) != 6 {
						return fmt.Sprintf("object %d = %s", i, l)
					}
				}
				return ""
			}
			waitUntil(t, "both lines on stdout and in out.jsonl", 30*time.Second, func() bool {
				b, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
				if jsonOK(string(b), 2) != "" {
					return false
				}
				if format == "json" {
					return jsonOK(stdout(), 2) == ""
				}
				return stdout() == want
			})
			stop()
			if strings.Contains(stderr(), "hello") || !strings.Contains(stderr(), "tailfeed running") {
				t.Errorf("stderr holds a line or lacks the log:\n%s", stderr())
			}
			if format == "json" {
				return
			}
			// A restart resumes after the committed lines: nothing repeated.
			appendTo(t, input, "third\n")
			objs = append(objs, map[string]any{"id": "", "feed": "app", "position": 31.0, "path": input, "line": "third"})
			stdout, stderr, stop = runSplit(t, dir, cfg)
			waitUntil(t, "the third line", 30*time.Second, func() bool {
				b, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
				return stdout() == "third\n" && jsonOK(string(b), 3) == ""
			})
			stop()
			if log := stderr(); !strings.Contains(log, "resume=\"the pointer's commit\" offset=25") {
				t.Errorf("the start-up log does not name the resume point:\n%s", log)
			}
		})
	}
}

// TestStartupLogNamesTargets: the start-up log names each feed's input and
// resume point and each processor's target, a webhook URL with its
// userinfo redacted.
func TestStartupLogNamesTargets(t *testing.T) {
	e := newEnv(t, `dataDir: ./state
status: {listen: "`+addrPlaceholder+`"}
feeds:
  - {name: app, path: ./app.log}
  - {name: late, path: ./late.log, readStrategy: LATEST}
processors:
  - {name: archive, feed: app, type: file, path: ./out/app.log, fsync: always}
  - {name: hook, feed: app, type: webhook, url: "http://svc:pa55word@127.0.0.1:9/in"}
  - {name: consumer, feed: app, type: pull}
  - {name: tally, feed: late, type: count}
  - {name: bin, feed: late, type: discard}
  - {name: show, feed: late, type: stdout, format: json}
`)
	d := e.start()
	d.stop()
	log := d.log()
	if strings.Contains(log, "pa55word") {
		t.Fatalf("the log shows the webhook's password:\n%s", log)
	}
	for _, want := range []string{
		"app: feed: input=" + e.path("app.log") + " readStrategy=COMMITTED resume=\"no pointer yet",
		"late: feed: input=" + e.path("late.log") + " readStrategy=LATEST resume=\"none (no pointer): from the end of the file\"",
		"processor=archive type=file target=" + e.path("out/app.log") + " format=raw fsync=always exactlyOnce=false",
		`processor=hook type=webhook target="http://***@127.0.0.1:9/in"`,
		"processor=consumer type=pull target=\"pulled by clients: GET /v1/pull/consumer\"",
		"processor=tally type=count target=\"counts, at GET /v1/state/tally\"",
		"processor=bin type=discard target=discarded",
		"processor=show type=stdout target=\"standard output\" format=json",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the start-up log lacks %q:\n%s", want, log)
		}
	}
}
