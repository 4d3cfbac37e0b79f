package config_test

import (
	"strings"
	"testing"

	"tailfeed/config"
)

// TestEnvExpansion: ${VAR} and ${VAR:-default} in scalar values, typed by
// what they expand to; $${ is a literal ${; every other $ is literal; keys
// are never expanded; a variable's value cannot change the structure.
func TestEnvExpansion(t *testing.T) {
	t.Setenv("TF_DIR", "/srv/logs")
	t.Setenv("TF_QC", "2048")
	t.Setenv("TF_EMPTY", "")
	t.Setenv("TF_TOKEN", "s3cret")
	t.Setenv("TF_STRUCT", "a: b")
	t.Setenv("TF_EO", "true")
	cfg := mustParse(t, lines(
		`status: {token: "${TF_TOKEN}"}`,
		"feeds:",
		"  - name: app",
		"    path: ${TF_DIR}/app.log",
		"    queueCapacity: ${TF_QC}",
		"    queueBytes: ${TF_UNSET_QB:-65536}",
		"    maxLineBytes: ${TF_EMPTY:-4096}",
		"processors:",
		`  - name: a`,
		`    feed: app`,
		`    type: file`,
		`    path: "/out/$${HOME}-$x-$$-${TF_STRUCT}"`,
		`    exactlyOnce: ${TF_EO}`,
		`  - {name: b, feed: app, type: discard, match: "error$", exclude: "^$TF_TOKEN"}`,
		`  - {name: c, feed: app, type: webhook, url: "http://h/${TF_UNSET_X:-in}", headers: {X-Key: "${TF_TOKEN}"}}`,
	), "/etc/tailfeed/tailfeed.yaml")
	f := cfg.Feeds[0]
	if f.Path != "/srv/logs/app.log" || f.QueueCapacity != 2048 || f.QueueBytes != 65536 || f.MaxLineBytes != 4096 {
		t.Errorf("feed: path %q queueCapacity %d queueBytes %d maxLineBytes %d", f.Path, f.QueueCapacity, f.QueueBytes, f.MaxLineBytes)
	}
	if cfg.Status.Token != "s3cret" {
		t.Errorf("token %q", cfg.Status.Token)
	}
	a, b, c := cfg.Processors[0], cfg.Processors[1], cfg.Processors[2]
	if a.Path != "/out/${HOME}-$x-$$-a: b" || !a.ExactlyOnce {
		t.Errorf("file path %q exactlyOnce %v", a.Path, a.ExactlyOnce)
	}
	if b.Match != "error$" || b.Exclude != "^$TF_TOKEN" {
		t.Errorf("match %q exclude %q", b.Match, b.Exclude)
	}
	if c.URL != "http://h/in" || c.Headers["X-Key"] != "s3cret" {
		t.Errorf("url %q headers %v", c.URL, c.Headers)
	}
	if got := cfg.Written("status.token", cfg.Status.Token); got != "${TF_TOKEN}" {
		t.Errorf("Written(status.token) = %q", got)
	}
	if got := cfg.Written("processors[2].headers.X-Key", "s3cret"); got != "${TF_TOKEN}" {
		t.Errorf("Written(header) = %q", got)
	}
	if got := cfg.Written("processors[1].match", "error$"); got != "error$" {
		t.Errorf("Written(match) = %q", got)
	}
}

// TestEnvKeysNotExpanded: a key is never expanded.
func TestEnvKeysNotExpanded(t *testing.T) {
	t.Setenv("TF_KEY", "dataDir")
	_, err := config.Parse([]byte(lines(
		`"${TF_KEY}": /var/x`,
		"feeds: [{name: app, path: /a.log}]",
		"processors: [{name: d, feed: app, type: discard}]",
	)), "c.yaml")
	if err == nil || !strings.Contains(err.Error(), `c.yaml:1: unknown key "${TF_KEY}" at top level`) {
		t.Fatalf("err = %v", err)
	}
}

// TestEnvQuotedStaysString: a quoted reference is a string, as quoted text
// always is, so an integer key refuses it at its line.
func TestEnvQuotedStaysString(t *testing.T) {
	t.Setenv("TF_QC", "2048")
	_, err := config.Parse([]byte(lines(
		"feeds:",
		"  - name: app",
		"    path: /a.log",
		`    queueCapacity: "${TF_QC}"`,
		"processors: [{name: d, feed: app, type: discard}]",
	)), "c.yaml")
	if err == nil || !strings.Contains(err.Error(), `c.yaml:4: feeds[0].queueCapacity: must be an integer, got string "2048"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestEnvErrors: an unset variable without a default, and malformed
// references, are errors at their line.
func TestEnvErrors(t *testing.T) {
	for _, tc := range []struct{ val, want string }{
		{"${TF_SURELY_UNSET}", "c.yaml:3: environment variable TF_SURELY_UNSET is not set (referenced as ${TF_SURELY_UNSET}; give a default with ${TF_SURELY_UNSET:-value})"},
		{"/a/${TF_SURELY_UNSET", "c.yaml:3: \"${TF_SURELY_UNSET\" starts an environment reference with no closing '}'"},
		{"/a/${1X}", "c.yaml:3: ${1X}: not an environment reference"},
		{"/a/${X-y}", "c.yaml:3: ${X-y}: not an environment reference"},
		{"/a/${}", "c.yaml:3: ${}: not an environment reference"},
		{"/a/${X:-${Y}}", "c.yaml:3: ${X:-${Y}: a default cannot hold another reference"},
	} {
		_, err := config.Parse([]byte(lines(
			"feeds:",
			"  - name: app",
			"    path: "+tc.val,
			"processors: [{name: d, feed: app, type: discard}]",
		)), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v\nwant %s", tc.val, err, tc.want)
		}
	}
}

func TestHasReference(t *testing.T) {
	for s, want := range map[string]bool{"${A}": true, "x${A:-b}": true, "$${A}": false, "$A": false, "a$": false, "$$${A}": false, "$${A}${B}": true} {
		if got := config.HasReference(s); got != want {
			t.Errorf("HasReference(%q) = %v", s, got)
		}
	}
}

// TestEnvUnsetOnlyError: an unset variable is the one error at its line,
// not also a type error about the unexpanded text, nor a "missing" key.
func TestEnvUnsetOnlyError(t *testing.T) {
	_, err := config.Parse([]byte(lines(
		"feeds:",
		"  - name: app",
		"    path: ${TF_SURELY_UNSET_P}",
		"    queueCapacity: ${TF_SURELY_UNSET_QC}",
		"processors:",
		"  - name: d",
		"    feed: app",
		"    type: ${TF_SURELY_UNSET_T}",
	)), "c.yaml")
	want := "c.yaml:3: environment variable TF_SURELY_UNSET_P is not set (referenced as ${TF_SURELY_UNSET_P}; give a default with ${TF_SURELY_UNSET_P:-value})\n" +
		"c.yaml:4: environment variable TF_SURELY_UNSET_QC is not set (referenced as ${TF_SURELY_UNSET_QC}; give a default with ${TF_SURELY_UNSET_QC:-value})\n" +
		"c.yaml:8: environment variable TF_SURELY_UNSET_T is not set (referenced as ${TF_SURELY_UNSET_T}; give a default with ${TF_SURELY_UNSET_T:-value})"
	if err == nil || err.Error() != want {
		t.Fatalf("err =\n%v\nwant\n%s", err, want)
	}
}
