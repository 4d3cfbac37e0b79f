package config_test

import (
	"strings"
	"testing"

	"tailfeed/config"
)

func TestGlobKeys(t *testing.T) {
	cfg := mustParse(t, strings.Join([]string{
		"feeds:",
		"  - name: app",
		"    path: logs/**/*.log",
		"    exclude: [logs/old/*.log]",
		"    scanIntervalMillis: 500",
		"    maxOpenFiles: 64",
		"    closeInactiveMillis: 1000",
		"    forgetAfterMillis: 2000",
		"processors:",
		"  - {name: p, feed: app, type: file, path: /out/p.log}",
	}, "\n"), "/etc/tailfeed/tailfeed.yaml")
	f := cfg.Feeds[0]
	if f.Path != "/etc/tailfeed/logs/**/*.log" || len(f.Exclude) != 1 || f.Exclude[0] != "/etc/tailfeed/logs/old/*.log" ||
		f.MaxOpenFiles != 64 || f.Built.ScanInterval.Milliseconds() != 500 || f.Built.CloseInactive.Milliseconds() != 1000 ||
		f.Built.ForgetAfter.Milliseconds() != 2000 {
		t.Fatalf("%+v", f)
	}
}

func TestGlobErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"    path: /a/x**/*.log\n", "tailfeed.yaml:3: feeds[0].path: bad glob"},
		{"    path: /a/*.log\n    exclude: [\"/a/[.log\"]\n", "tailfeed.yaml:4: feeds[0].exclude[0]: bad glob"},
		{"    path: /a/b.log\n    exclude: [/a/c.log]\n", "tailfeed.yaml:4: feeds[0].exclude: exclude needs a glob path"},
		{"    path: /a/*.log\n    maxOpenFiles: 1\n", "tailfeed.yaml:4: feeds[0].maxOpenFiles"},
	} {
		src := "feeds:\n  - name: app\n" + c.yaml + "processors:\n  - {name: p, feed: app, type: file, path: /out/p.log}\n"
		_, err := config.Parse([]byte(src), "/etc/tailfeed/tailfeed.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.want)
		}
	}
}
