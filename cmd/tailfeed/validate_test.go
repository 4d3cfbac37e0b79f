package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tailfeed/config"
)

// TestValidateKnowsEverySinkType: the validate command knows every sink
// type of the binary (config holds no list: the sink packages register
// theirs, and this binary imports them all through internal/daemon), and
// refuses an unknown one at its line, listing the known types.
func TestValidateKnowsEverySinkType(t *testing.T) {
	want := []string{"count", "discard", "file", "kafka", "nats", "postgres", "pull", "stdout", "webhook"}
	if got := config.SinkTypes(); !slices.Equal(got, want) {
		t.Fatalf("registered types %v, want %v", got, want)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "t.yaml")
	src := strings.Join([]string{
		"feeds:",
		"  - {name: app, path: /var/log/app.log}",
		"processors:",
		"  - {name: f, feed: app, type: file, path: out.log}",
		"  - {name: p, feed: app, type: pull}",
		"  - {name: w, feed: app, type: webhook, url: 'http://127.0.0.1:9/in'}",
		"  - {name: c, feed: app, type: count}",
		"  - {name: d, feed: app, type: discard}",
		"  - {name: s, feed: app, type: stdout}",
		"  - {name: k, feed: app, type: kafka, brokers: ['127.0.0.1:9092'], topic: logs}",
		"  - {name: n, feed: app, type: nats, url: 'nats://127.0.0.1:4222', stream: LOGS, subject: logs}",
		"  - {name: g, feed: app, type: postgres, dsn: 'host=db dbname=logs', table: lines}",
	}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := cmdValidate([]string{"--config", path}, &out, &errb); code != 0 || !strings.Contains(out.String(), "ok (1 feeds, 9 processors)") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	bad := strings.Replace(src, "type: stdout", "type: kinesis", 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := cmdValidate([]string{"--config", path}, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), `t.yaml:9: processors[5].type: unknown value "kinesis"; want one of `+strings.Join(want, ", ")) {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
}
