package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestExamplesValidate: every config in examples/ passes `tailfeed
// validate` through the binary, and together they hold one complete config
// per processor type (file twice: with and without exactlyOnce).
func TestExamplesValidate(t *testing.T) {
	t.Setenv("HOOK_TOKEN", "example-token")    // webhook.yaml's ${HOOK_TOKEN}
	t.Setenv("KAFKA_PASSWORD", "example-pass") // kafka.yaml's ${KAFKA_PASSWORD}
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	typeRE := regexp.MustCompile(`(?m)^\s+type: (\w+)`)
	types := map[string]bool{}
	exactlyOnce := false
	for _, f := range files {
		if out, stderr, code := cli(t, "validate", "--config", f); code != 0 || !strings.Contains(out, ": ok") {
			t.Errorf("%s: exit %d\n%s%s", f, code, out, stderr)
		}
		b, _ := os.ReadFile(f)
		for _, m := range typeRE.FindAllStringSubmatch(string(b), -1) {
			types[m[1]] = true
		}
		exactlyOnce = exactlyOnce || strings.Contains(string(b), "exactlyOnce: true")
	}
	for _, want := range []string{"file", "pull", "webhook", "count", "discard", "stdout", "kafka", "nats", "postgres"} {
		if !types[want] {
			var got []string
			for k := range types {
				got = append(got, k)
			}
			sort.Strings(got)
			t.Errorf("no example of type %s (examples have %v)", want, got)
		}
	}
	if !exactlyOnce {
		t.Error("no example with exactlyOnce: true")
	}
	// Without HOOK_TOKEN the webhook example names what is missing, at its line.
	t.Setenv("HOOK_TOKEN", "")
	os.Unsetenv("HOOK_TOKEN")
	webhook := filepath.Join("..", "examples", "webhook.yaml")
	if _, stderr, code := cli(t, "validate", "--config", webhook); code != 2 || !strings.Contains(stderr, "environment variable HOOK_TOKEN is not set") {
		t.Errorf("webhook.yaml without HOOK_TOKEN: exit %d, stderr %q", code, stderr)
	}
}
