package config_test

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"tailfeed/config"
)

// lines joins its arguments into a YAML document; line N is argument N-1.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// feedDoc is a one-feed config whose extra lines start at line 4, inside the
// feed; a discard processor reading the feed follows them.
func feedDoc(extra ...string) string {
	return read(lines(append([]string{
		"feeds:",
		"  - name: app",
		"    path: /var/log/app.log",
	}, extra...)...), "app")
}

// read appends to src (which must end at its feeds list, with no
// processors key) one discard processor for each named feed, so a config
// test about something else is not also a feed no processor reads.
func read(src string, feeds ...string) string {
	src += "processors:\n"
	for i, f := range feeds {
		src += fmt.Sprintf("  - {name: reader%d, feed: %q, type: discard}\n", i, f)
	}
	return src
}

// procDoc is feedDoc plus one discard processor whose extra lines start at line 8.
func procDoc(extra ...string) string {
	return lines(append([]string{
		"feeds:",
		"  - name: app",
		"    path: /var/log/app.log",
		"processors:",
		"  - name: p",
		"    feed: app",
		"    type: discard",
	}, extra...)...)
}

// mustFail parses src and returns its errors, failing the test when it parses.
func mustFail(t *testing.T, src string) config.Errors {
	t.Helper()
	cfg, err := config.Parse([]byte(src), "/etc/tailfeed/t.yaml")
	if err == nil {
		t.Fatalf("parsed, want an error; config %+v", cfg)
	}
	var errs *config.Errors
	if !errors.As(err, &errs) || len(*errs) == 0 {
		t.Fatalf("error %T %q is not a non-empty *Errors", err, err)
	}
	if cfg != nil {
		t.Errorf("got a config along with the error")
	}
	return *errs
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		src  string
		line int
		want string
		more bool // other (follow-on) errors are expected too
	}{
		// YAML itself
		{"syntax", feedDoc("    readStrategy: a: b"), 4, "YAML syntax error: mapping values are not allowed", false},
		{"syntax on line 1", "feeds: a: b\n", 1, "YAML syntax error", false},
		{"syntax unclosed flow", lines("dataDir: x", "status: {listen: a", "feeds: []"), 2, "YAML syntax error: did not find expected ',' or '}'", false},
		{"syntax tab indent", feedDoc("    queueCapacity: 5", "\tqueueBytes: 5"), 5, "tab character", false},
		{"control character", feedDoc("    readStrategy: \x01"), 4, "control characters are not allowed", false},
		{"invalid utf-8", lines("dataDir: x", "feeds:", "  - name: \xff"), 3, "UTF-8", false},
		{"unknown alias", feedDoc("    queueCapacity: *cap"), 4, "unknown anchor 'cap'", false},
		{"duplicate key", feedDoc("    queueCapacity: 5", "    queueCapacity: 6"), 5, `duplicate key "queueCapacity" in feeds[0] (first at line 4)`, false},
		{"second document", lines("feeds:", "  - {name: a, path: /a}", "processors: [{name: r, feed: a, type: discard}]", "---", "feeds: []"), 5, "a config is one YAML document", false},
		{"top level a list", "- feeds\n", 1, "the config: must be a mapping, got a list", false},
		{"null document", "~\n", 1, "empty document", false},

		// unknown keys, everywhere
		{"unknown top key", read(lines("dataDri: x", "feeds:", "  - {name: a, path: /a}"), "a"), 1, `unknown key "dataDri" at top level (did you mean "dataDir"?)`, false},
		{"unknown feed key", feedDoc("    queueCapacty: 5"), 4, `unknown key "queueCapacty" in feed`, false},
		{"unknown status key", read(lines("status:", "  listen: 127.0.0.1:1", "  tokn: x", "feeds:", "  - {name: a, path: /a}"), "a"), 3, `unknown key "tokn" in status (did you mean "token"?)`, false},
		{"unknown log key", read(lines("log: {level: info, colour: true}", "feeds:", "  - {name: a, path: /a}"), "a"), 1, `unknown key "colour" in log`, false},
		{"unknown overload key", feedDoc("    overload:", "      polcy: PAUSE"), 5, `unknown key "polcy" in feeds[0].overload (did you mean "policy"?)`, false},
		{"unknown subscriber key", lines("feeds:", "  - name: app", "    path: /a", "    overload:", "      subscribers:", "        p: {polcy: PAUSE}", "processors:", "  - {name: p, feed: app, type: discard}"), 6, `unknown key "polcy" in feeds[0].overload.subscribers.p`, false},
		{"unknown processor key", procDoc("    exactly_once: true"), 8, `unknown key "exactly_once" in processors[0]`, false},
		{"unknown retry key", procDoc("    retry: {attempt: 3}"), 8, `unknown key "attempt" in processors[0].retry (did you mean "attempts"?)`, false},

		// types
		{"string for int", feedDoc(`    queueCapacity: "100"`), 4, `feeds[0].queueCapacity: must be an integer, got string "100"`, false},
		{"float for int", feedDoc("    pollIntervalMillis: 2.5"), 4, "feeds[0].pollIntervalMillis: must be an integer, got number 2.5", false},
		{"int overflow", feedDoc("    queueBytes: 99999999999999999999999"), 4, "must be an integer, got number 99999999999999999999999 (out of range)", false},
		{"string for bool", procDoc("    exactlyOnce: yes"), 8, `processors[0].exactlyOnce: must be true or false, got string "yes"`, false},
		{"list for string", feedDoc("    readStrategy: [COMMITTED]"), 4, "feeds[0].readStrategy: must be a string, got a list", false},
		{"mapping for list", lines("feeds: {name: a}"), 1, "feeds: must be a list, got a mapping", false},
		{"feed not a mapping", lines("feeds:", "  - app"), 2, `feeds[0]: must be a mapping, got string "app"`, false},
		{"string for jitter", procDoc("    retry: {jitter: lots}"), 8, `processors[0].retry.jitter: must be a number, got string "lots"`, false},
		{"status not a mapping", read(lines("status: 127.0.0.1:8470", "feeds:", "  - {name: a, path: /a}"), "a"), 1, "status: must be a mapping, got string", false},

		// enums
		{"readStrategy", feedDoc("    readStrategy: NEWEST"), 4, `feeds[0].readStrategy: unknown value "NEWEST"; want one of COMMITTED, EARLIEST, LATEST, ONCE_EARLIEST, ONCE_LATEST`, false},
		{"readStrategy case", feedDoc("    readStrategy: committed"), 4, `(did you mean "COMMITTED"?)`, false},
		{"overload policy", feedDoc("    overload: {policy: DROP}"), 4, `feeds[0].overload.policy: unknown value "DROP"`, false},
		{"subscriber policy", lines("feeds:", "  - name: app", "    path: /a", "    overload:", "      subscribers:", "        p: {policy: SPIN}", "processors:", "  - {name: p, feed: app, type: discard}"), 6, `feeds[0].overload.subscribers.p.policy: unknown value "SPIN"`, false},
		{"type", lines("feeds:", "  - {name: app, path: /a}", "processors:", "  - name: p", "    feed: app", "    type: kinesis"), 6, `processors[0].type: unknown value "kinesis"; want one of count, discard, file, kafka, nats, postgres, pull, stdout, webhook`, false}, // the registered types, sorted
		{"fsync", procDoc("    fsync: sometimes"), 8, `processors[0].fsync: unknown value "sometimes"; want one of always, interval, never`, false},
		{"onFailure", procDoc("    onFailure: deadletter"), 8, `processors[0].onFailure: unknown value "deadletter"; want one of hold, deadLetter (did you mean "deadLetter"?)`, false},
		{"log.level", read(lines("log: {level: verbose}", "feeds:", "  - {name: a, path: /a}"), "a"), 1, `log.level: unknown value "verbose"; want one of trace, debug, info, warn, error`, false},
		{"log.format", read(lines("log:", "  format: xml", "feeds:", "  - {name: a, path: /a}"), "a"), 2, `log.format: unknown value "xml"; want one of text, json`, false},

		// names and references
		{"duplicate feed", read(lines("feeds:", "  - {name: app, path: /a}", "  - name: app", "    path: /b"), "app"), 3, `feeds[1].name: duplicate feed name "app" (also feeds[0], line 2)`, false},
		{"duplicate processor", procDoc("  - name: p", "    feed: app", "    type: pull"), 8, `processors[1].name: duplicate processor name "p" (also processors[0], line 5)`, false},
		{"bad feed name", read(lines("feeds:", "  - name: my app", "    path: /a"), "my app"), 2, `feeds[0].name: "my app" is not a valid name`, false},
		{"dot-dot name", procDoc("  - {name: .., feed: app, type: discard}"), 8, `processors[1].name: ".." is not a valid name`, false},
		{"dangling feed", procDoc("  - name: q", "    feed: ap", "    type: pull"), 9, `processors[1].feed: no feed named "ap" (did you mean "app"?)`, false},
		{"subscriber names nothing", lines("feeds:", "  - name: app", "    path: /a", "    overload:", "      subscribers:", "        hook: {policy: DROP_AFTER_SPIN}", "processors:", "  - {name: p, feed: app, type: discard}"), 6, `feeds[0].overload.subscribers: "hook" names no processor`, false},
		{"subscriber of another feed", lines("feeds:", "  - name: app", "    path: /a", "    overload:", "      subscribers: {q: {policy: DROP_AFTER_SPIN}}", "  - {name: web, path: /b}", "processors:", "  - {name: q, feed: web, type: discard}", "  - {name: r, feed: app, type: discard}"), 5, `"q" is a processor of feed "web", not of "app"`, false},

		// rotatedNames
		{"rotatedNames bad glob", feedDoc("    rotatedNames:", "      - 'app.log.*'", "      - 'app.log.[0-9'"), 6, `feeds[0].rotatedNames[1]: bad glob "app.log.[0-9": syntax error in pattern`, false},
		{"rotatedNames with a slash", feedDoc("    rotatedNames: ['old/app.log.*']"), 4, `feeds[0].rotatedNames[0]: "old/app.log.*" holds a '/'; the globs match base names only`, false},
		{"rotatedNames empty glob", feedDoc("    rotatedNames:", "      - ''"), 5, "feeds[0].rotatedNames[0]: must not be empty", false},
		{"rotatedNames empty list", feedDoc("    rotatedNames: []"), 4, "feeds[0].rotatedNames: must not be an empty list", false},
		{"rotatedNames not a list", feedDoc("    rotatedNames: app.log.*"), 4, "feeds[0].rotatedNames: must be a list, got string", false},
		{"rotatedNames item a mapping", feedDoc("    rotatedNames:", "      - {a: b}"), 5, "feeds[0].rotatedNames[0]: must be a string (a glob over base names), got a mapping", false},

		// regexes
		{"bad match", procDoc(`    match: "a(b"`), 8, "processors[0].match: bad regular expression: missing closing )", false},
		{"bad exclude", procDoc(`    exclude: '\p{Nope}'`), 8, "processors[0].exclude: bad regular expression", false},
		{"perl lookahead is not RE2", procDoc(`    match: "a(?=b)"`), 8, "processors[0].match: bad regular expression", false},

		// ranges
		{"queueCapacity negative", feedDoc("    queueCapacity: -3"), 4, "feeds[0].queueCapacity: must be positive, got -3", false},
		{"queueBytes zero", feedDoc("    queueBytes: 0"), 4, "feeds[0].queueBytes: must be positive, got 0", false},
		{"maxLineBytes zero", feedDoc("    maxLineBytes: 0"), 4, "feeds[0].maxLineBytes: must be positive", false},
		{"maxLineBytes huge", feedDoc("    maxLineBytes: 2147483648"), 4, "feeds[0].maxLineBytes: must be at most 1073741824, got 2147483648", false},
		{"maxPendingAcks zero", feedDoc("    maxPendingAcks: 0"), 4, "feeds[0].maxPendingAcks: must be positive", false},
		{"pollIntervalMillis zero", feedDoc("    pollIntervalMillis: 0"), 4, "feeds[0].pollIntervalMillis: must be positive", false},
		{"commitSyncMillis negative", feedDoc("    commitSyncMillis: -10"), 4, "feeds[0].commitSyncMillis: must be positive, got -10", false},
		{"rotateWaitMillis negative", feedDoc("    rotateWaitMillis: -1"), 4, "feeds[0].rotateWaitMillis: must be at least 0, got -1", false},
		{"spinBoundMillis zero", feedDoc("    overload: {spinBoundMillis: 0}"), 4, "feeds[0].overload.spinBoundMillis: must be positive", false},
		{"maxInFlight zero", procDoc("    maxInFlight: 0"), 8, "processors[0].maxInFlight: must be positive", false},
		{"ackTimeoutMillis negative", procDoc("    ackTimeoutMillis: -1"), 8, "processors[0].ackTimeoutMillis: must be positive", false},
		{"batchMaxLines zero", procDoc("    batchMaxLines: 0"), 8, "processors[0].batchMaxLines: must be positive", false},
		{"batchMaxBytes zero", procDoc("    batchMaxBytes: 0"), 8, "processors[0].batchMaxBytes: must be positive", false},
		{"timeoutMillis zero", procDoc("    timeoutMillis: 0"), 8, "processors[0].timeoutMillis: must be positive", false},
		{"fsyncIntervalMillis zero", procDoc("    fsyncIntervalMillis: 0"), 8, "processors[0].fsyncIntervalMillis: must be positive", false},
		{"retry.attempts zero", procDoc("    retry:", "      attempts: 0"), 9, "processors[0].retry.attempts: must be positive", false},
		{"retry.initialMillis zero", procDoc("    retry:", "      initialMillis: 0"), 9, "processors[0].retry.initialMillis: must be positive", false},
		{"retry.maxMillis below initial", procDoc("    retry:", "      initialMillis: 2000", "      maxMillis: 1000"), 10, "processors[0].retry: maxMillis (1000) must be at least initialMillis (2000)", false},
		{"retry.maxMillis below default initial", procDoc("    retry: {maxMillis: 500}"), 8, "maxMillis (500) must be at least initialMillis (1000)", false},
		{"jitter above 1", procDoc("    retry: {jitter: 1.5}"), 8, "processors[0].retry.jitter: must be between 0 and 1, got 1.5", false},
		{"jitter negative", procDoc("    retry: {jitter: -0.1}"), 8, "processors[0].retry.jitter: must be between 0 and 1, got -0.1", false},
		{"jitter nan", procDoc("    retry: {jitter: .nan}"), 8, "processors[0].retry.jitter: must be between 0 and 1", false},
		{"shutdownTimeoutMillis zero", read(lines("shutdownTimeoutMillis: 0", "feeds:", "  - {name: a, path: /a}"), "a"), 1, "shutdownTimeoutMillis: must be positive", false},
		{"stallAlertMillis over a year", read(lines("status: {stallAlertMillis: 31536000001}", "feeds:", "  - {name: a, path: /a}"), "a"), 1, "status.stallAlertMillis: must be at most 31536000000", false},

		// required keys
		{"feed without name", lines("feeds:", "  - path: /a"), 2, "feeds[0]: missing name", false},
		{"feed with null name", lines("feeds:", "  - name:", "    path: /a"), 2, "feeds[0]: missing name", false},
		{"feed no processor reads", lines("feeds:", "  - {name: a, path: /a}", "  - name: b", "    path: /b", "processors:", "  - {name: p, feed: a, type: discard}"), 3, `feeds[1]: no processor reads feed "b"; its lines would go nowhere`, false},
		{"feed and no processors", lines("feeds:", "  - name: app", "    path: /a"), 2, `feeds[0]: no processor reads feed "app"`, false},
		{"only processor misspells its feed", lines("feeds:", "  - {name: app, path: /a}", "processors:", "  - {name: p, feed: ap, type: discard}"), 4, `no feed named "ap"`, false},
		{"feed without path", read(lines("feeds:", "  - name: app"), "app"), 2, "feeds[0]: missing path", false},
		{"feed with empty path", read(lines("feeds:", "  - name: app", `    path: ""`), "app"), 3, "feeds[0].path: must not be empty", false},
		{"processor without name", lines("feeds:", "  - {name: app, path: /a}", "processors:", "  - feed: app", "    type: pull"), 4, "processors[0]: missing name", false},
		{"processor without feed", lines("feeds:", "  - {name: app, path: /a}", "processors:", "  - name: p", "    type: pull"), 4, "processors[0]: missing feed", false},
		{"processor without type", lines("feeds:", "  - {name: app, path: /a}", "processors:", "  - name: p", "    feed: app"), 4, "processors[0]: missing type (one of count, discard, file, kafka, nats, postgres, pull, stdout, webhook)", false},
		{"file without path", lines("feeds:", "  - {name: app, path: /a}", "processors:", "  - name: p", "    feed: app", "    type: file"), 4, "processors[0]: a file processor needs path", false},
		{"webhook without url", lines("feeds:", "  - {name: app, path: /a}", "processors:", "  - name: p", "    feed: app", "    type: webhook"), 4, "processors[0]: a webhook processor needs url", false},
		{"webhook url not http", procDoc("    url: ftp://host/x"), 8, `processors[0].url: "ftp://host/x" must be an http:// or https:// URL`, false},
		{"webhook url without host", procDoc("    url: http:///x"), 8, `processors[0].url: "http:///x" has no host`, false},
		{"webhook url unparsable", procDoc(`    url: "http://a b/%zz"`), 8, `processors[0].url: "http://a b/%zz" is not a URL`, false},
		{"webhook Idempotency-Key header", procDoc("    headers:", "      idempotency-key: x"), 9, `"idempotency-key" is set by tailfeed`, false},
		{"webhook bad header name", procDoc("    headers: {\"X Source\": a}"), 8, `processors[0].headers: "X Source" is not a valid HTTP header name`, false},
		{"bad listen", read(lines("status: {listen: localhost}", "feeds:", "  - {name: a, path: /a}"), "a"), 1, `status.listen: "localhost" is not host:port`, false},

		// paths
		{"two file sinks on one path", lines("feeds:", "  - {name: app, path: /var/log/app.log}", "processors:",
			"  - {name: a, feed: app, type: file, path: out/app.log}",
			"  - {name: b, feed: app, type: file, path: ./out/../out/app.log}"), 5,
			`processors[1].path: /etc/tailfeed/out/app.log is already written by file processor "a" (line 4)`, false},
		{"file sink on the feed's input", lines("feeds:", "  - {name: app, path: /etc/tailfeed/app.log}", "processors:",
			"  - {name: a, feed: app, type: file, path: app.log}"), 4,
			`processors[0].path: /etc/tailfeed/app.log is the input of feed "app"`, false},

		{"file sink in dataDir", lines("dataDir: /srv/tf", "feeds:", "  - {name: app, path: /a}", "processors:",
			"  - {name: a, feed: app, type: file, path: /srv/tf/feeds/app.ptr}"), 5,
			"processors[0].path: /srv/tf/feeds/app.ptr is tailfeed's own state under dataDir /srv/tf", false},
		{"file sink on the losses ledger", lines("dataDir: /srv/tf", "feeds:", "  - {name: app, path: /a}", "processors:",
			"  - {name: a, feed: app, type: file, path: /srv/tf/losses.jsonl}"), 5,
			"processors[0].path: /srv/tf/losses.jsonl is tailfeed's own state under dataDir /srv/tf", false},

		// feeds
		{"empty feeds list", lines("dataDir: x", "feeds: []"), 2, "no feeds", false},
		{"null feeds", lines("dataDir: x", "feeds:"), 0, "no feeds", false},
		{"no feeds key", lines("dataDir: x"), 0, "no feeds", false},
		{"empty document", "", 0, "empty document", false},
		{"comments only", "# nothing here\n", 0, "empty document", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := mustFail(t, tt.src)
			found := false
			for _, e := range errs {
				if e.Line == tt.line && strings.Contains(e.Msg, tt.want) {
					found = true
				}
				if e.File != "/etc/tailfeed/t.yaml" {
					t.Errorf("File = %q", e.File)
				}
			}
			if !found {
				t.Errorf("want line %d %q; got\n%v", tt.line, tt.want, &errs)
			}
			if !tt.more && len(errs) != 1 {
				t.Errorf("want exactly one error; got\n%v", &errs)
			}
		})
	}
}

// TestParseListsEveryError checks that one file yields all its problems, in
// line order, each formatted FILE:LINE: message.
func TestParseListsEveryError(t *testing.T) {
	src := lines(
		"dataDir: ./state", // 1
		"status:",          // 2
		"  listen: 127.0.0.1:8470",
		"  protectRead: maybe", // 4
		"log: {level: info}",
		"feeds:",
		"  - name: app",
		"    path: app.log",
		"    queueCapacty: 5",      // 9
		"    readStrategy: OLDEST", // 10
		"  - name: app",            // 11
		"    path: other.log",
		"processors:",
		"  - name: archive",
		"    feed: app",
		"    type: file",
		"    path: app.log", // 17
		"    fsync: never",
		"  - name: hook",
		"    feed: ap", // 20
		"    type: webhook",
		"    url: http://127.0.0.1:9000/ingest",
		"    match: '(['", // 23
		"    retry: {initialMillis: 1000, maxMillis: 16000, jitter: 0.2, attempts: -1}", // 24
	)
	_, err := config.Parse([]byte(src), "cfg/tailfeed.yaml")
	want := []string{
		`cfg/tailfeed.yaml:4: status.protectRead: must be true or false, got string "maybe"`,
		`cfg/tailfeed.yaml:9: unknown key "queueCapacty" in feeds[0] (did you mean "queueCapacity"?)`,
		`cfg/tailfeed.yaml:10: feeds[0].readStrategy: unknown value "OLDEST"; want one of COMMITTED, EARLIEST, LATEST, ONCE_EARLIEST, ONCE_LATEST`,
		`cfg/tailfeed.yaml:11: feeds[1].name: duplicate feed name "app" (also feeds[0], line 7)`,
		`cfg/tailfeed.yaml:17: processors[0].path: ` + filepath.Join(mustAbs(t, "cfg"), "app.log") + ` is the input of feed "app"; a file sink cannot write the file it reads`,
		`cfg/tailfeed.yaml:20: processors[1].feed: no feed named "ap" (did you mean "app"?)`,
		"cfg/tailfeed.yaml:23: processors[1].match: bad regular expression: missing closing ]: `[`",
		`cfg/tailfeed.yaml:24: processors[1].retry.attempts: must be positive, got -1`,
	}
	if err == nil {
		t.Fatal("parsed")
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	cfg, err := config.Load(path)
	if cfg != nil || err == nil {
		t.Fatalf("Load = %v, %v", cfg, err)
	}
	if want := path + ": cannot read config file: no such file or directory"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	var errs *config.Errors
	if !errors.As(err, &errs) || len(*errs) != 1 || (*errs)[0].Line != 0 || (*errs)[0].File != path {
		t.Errorf("want one *Error without a line, got %#v", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is(err, fs.ErrNotExist) = false")
	}
}

func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	_, err := config.Load(dir)
	if err == nil || !strings.HasPrefix(err.Error(), dir+": cannot read config file: ") {
		t.Errorf("Load(dir) = %v", err)
	}
}

func TestParseUnnamed(t *testing.T) {
	_, err := config.Parse([]byte("feeds: []\n"), "")
	if err == nil || err.Error() != "<config>:1: no feeds: the config must define at least one entry under feeds" {
		t.Errorf("got %v", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestParseBounds: aliases cannot make a small file cost unbounded work, and
// the error list is capped.
func TestParseBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("feeds:\n  - &m {name: a, path: /a")
	for i := range 2000 {
		fmt.Fprintf(&b, ", k%d: 1", i)
	}
	b.WriteString("}\n")
	for range 100 {
		b.WriteString("  - *m\n")
	}
	errs := mustFail(t, b.String())
	if n := len(errs); n != config.MaxErrors+1 || !strings.HasPrefix(errs[n-1].Msg, "too many errors; ") {
		t.Errorf("%d errors, last %v", n, errs[n-1])
	}
	for i := 1; i < len(errs); i++ {
		if errs[i].Line < errs[i-1].Line {
			t.Fatalf("not sorted at %d", i)
		}
	}

	b.Reset()
	b.WriteString("feeds:\n  - &m {name: a, path: /a")
	for i := range 2000 {
		fmt.Fprintf(&b, ", queueCapacity%d: 1", i)
	}
	b.WriteString("}\n")
	for range 1000 {
		b.WriteString("  - *m\n")
	}
	_, err := config.Parse([]byte(b.String()), "/t.yaml")
	if err == nil || !strings.Contains(err.Error(), "too large once its aliases are expanded") {
		t.Errorf("want the expansion bound, got %.300v", err)
	}
}
