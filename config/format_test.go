package config_test

import (
	"strings"
	"testing"

	"tailfeed/config"
)

// TestFormatKey: `format: raw|json` on file and stdout processors; a bad
// value or the key on another type is an error at its line.
func TestFormatKey(t *testing.T) {
	cfg := mustParse(t, lines(
		"feeds: [{name: app, path: /a.log}]",
		"processors:",
		"  - {name: f, feed: app, type: file, path: /o, format: json, exactlyOnce: true}",
		"  - {name: s, feed: app, type: stdout}",
		"  - {name: r, feed: app, type: stdout, format: raw}",
	), "c.yaml")
	if f, s, r := cfg.Processors[0], cfg.Processors[1], cfg.Processors[2]; f.Format != config.FormatJSON || s.Format != "" || s.Type != "stdout" || r.Format != config.FormatRaw {
		t.Fatalf("formats %q %q %q", f.Format, s.Format, r.Format)
	}
	for _, tc := range []struct{ proc, want string }{
		{"{name: f, feed: app, type: file, path: /o, format: xml}", `c.yaml:3: processors[0].format: unknown value "xml"; want one of raw, json`},
		{"{name: f, feed: app, type: webhook, url: http://h/, format: json}", "c.yaml:3: processors[0].format: format applies to file and stdout processors, not webhook"},
	} {
		_, err := config.Parse([]byte(lines("feeds: [{name: app, path: /a.log}]", "processors:", "  - "+tc.proc)), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v\nwant %s", tc.proc, err, tc.want)
		}
	}
}
