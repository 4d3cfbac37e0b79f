package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpEveryCommand: `tailfeed help`, `tailfeed help CMD`, `tailfeed CMD
// --help` and `-h` exit 0 and describe the command on stdout: its usage,
// what it does, its flags (every flag its flag set defines) and its exit
// codes.
func TestHelpEveryCommand(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := mainWith(args, &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}} {
		code, out, _ := run(args...)
		if code != 0 || !strings.Contains(out, "commands:") {
			t.Fatalf("%v: exit %d\n%s", args, code, out)
		}
		for _, c := range commandOrder {
			if !strings.Contains(out, "tailfeed "+c) {
				t.Errorf("%v does not list %s:\n%s", args, c, out)
			}
		}
	}
	flags := map[string][]string{
		"run": {"-config"}, "validate": {"-config"}, "status": {"-addr", "-wait-settled", "-json"},
		"pointer": {"-json"}, "version": nil, "help": nil,
	}
	for _, c := range commandOrder {
		asks := [][]string{{"help", c}, {c, "--help"}, {c, "-h"}}
		if c == "pointer" {
			asks = append(asks, []string{"pointer", "show", "--help"}, []string{"pointer", "show", "x.ptr", "-h"})
		}
		for _, args := range asks {
			code, out, stderr := run(args...)
			if code != 0 || stderr != "" {
				t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
			}
			if !strings.Contains(out, "usage: tailfeed "+c) || !strings.Contains(out, helps[c].about) || !strings.Contains(out, "exit codes:\n  0") {
				t.Errorf("%v: stdout lacks the usage, description or exit codes:\n%s", args, out)
			}
			for _, f := range flags[c] {
				if !strings.Contains(out, "  "+f+" ") && !strings.Contains(out, "  "+f+"\n") {
					t.Errorf("%v: stdout lacks flag %s:\n%s", args, f, out)
				}
			}
		}
	}
	if code, _, _ := run("help", "nope"); code != 2 {
		t.Errorf("help for an unknown command: exit %d, want 2", code)
	}
}

// A command that takes no positional argument refuses one (exit 2, naming
// it) rather than ignoring it: `tailfeed validate --config x.yaml extra`
// exited 0, as did `tailfeed version extra` (a black-box probe of the
// forty-fourth session).
func TestExtraArgumentIsAUsageError(t *testing.T) {
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := mainWith(args, &out, &errb)
		return code, out.String(), errb.String()
	}
	cfg := filepath.Join(t.TempDir(), "tailfeed.yaml")
	os.WriteFile(cfg, []byte("feeds:\n  - {name: app, path: /var/log/app.log}\nprocessors:\n  - {name: p, feed: app, type: discard}\n"), 0o600)
	for _, args := range [][]string{
		{"version", "extra"},
		{"validate", "--config", cfg, "extra"},
		{"run", "--config", cfg, "extra"},
		{"status", "--addr", "127.0.0.1:1", "extra"},
	} {
		code, _, stderr := run(args...)
		if code != 2 || !strings.Contains(stderr, `unexpected argument "extra"`) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming the argument", args, code, stderr)
		}
	}
	if code, _, _ := run("validate", "--config", cfg); code != 0 {
		t.Errorf("validate without the extra argument: exit %d", code)
	}
}
