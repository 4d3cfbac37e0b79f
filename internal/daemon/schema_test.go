package daemon

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"tailfeed/config"
)

// The feed.status document of DESIGN §7, field by field: name → kind.
// Kinds: bool, uint (a non-negative integer), string, hex16 (16 lowercase
// hex digits), state/policy/substate (one of the contract's words),
// nullstring (null or a string), and the nested shapes.
var (
	topFields = map[string]string{
		"settled": "bool", "lossless": "bool", "version": "uint", "feeds": "feeds",
	}
	feedFields = map[string]string{
		"feed": "string", "path": "string", "state": "state", "bounded": "bool", "sequence": "uint",
		"detail": "nullstring", "drained": "bool", "settled": "bool", "lossless": "bool", "policy": "policy",
		"dropped": "uint", "refused": "uint", "downgraded": "uint", "completionFailures": "uint",
		"released": "uint", "deadLettered": "uint", "oversized": "uint", "unterminated": "uint",
		"lostTails": "uint", "paused": "bool", "pauses": "uint", "acknowledged": "uint",
		"pendingAcks": "uint", "consumers": "uint", "stalled": "nullstring", "epoch": "hex16",
		"pointer": "pointer", "subscribers": "subscribers",
	}
	pointerFields = map[string]string{
		"offset": "uint", "epoch": "hex16", "commits": "uint", "commitFailures": "uint",
	}
	subscriberFields = map[string]string{
		"queue": "string", "position": "uint", "dispatched": "uint", "drained": "bool", "state": "substate",
	}
	hex16 = regexp.MustCompile(`^[0-9a-f]{16}$`)
	words = map[string][]string{
		"state":    {"STARTING", "WAITING_FOR_FILE", "BEHIND", "CAUGHT_UP", "END_OF_STREAM", "FAILED"},
		"policy":   {"PAUSE", "DROP_AFTER_SPIN", "BLOCK_WITH_DEADLINE"},
		"substate": {"LIVE", "FENCED", "DEAD", "STOPPED"},
	}
)

// checkSchema fails t unless raw is a feed.status document with every field
// of the contract present and of its type.
func checkSchema(t *testing.T, raw []byte) {
	t.Helper()
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("feed.status is not JSON: %v", err)
	}
	checkObject(t, "report", doc, topFields)
}

func checkObject(t *testing.T, where string, v any, fields map[string]string) {
	t.Helper()
	obj, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: want an object, got %T", where, v)
	}
	for name, kind := range fields {
		val, ok := obj[name]
		if !ok {
			t.Fatalf("%s: field %q missing", where, name)
		}
		checkValue(t, where+"."+name, val, kind)
	}
}

func checkValue(t *testing.T, where string, v any, kind string) {
	t.Helper()
	switch kind {
	case "bool":
		if _, ok := v.(bool); !ok {
			t.Fatalf("%s: want a boolean, got %#v", where, v)
		}
	case "uint":
		n, ok := v.(float64)
		if !ok || n < 0 || n != float64(int64(n)) {
			t.Fatalf("%s: want a non-negative integer, got %#v", where, v)
		}
	case "string":
		if _, ok := v.(string); !ok {
			t.Fatalf("%s: want a string, got %#v", where, v)
		}
	case "nullstring":
		if _, ok := v.(string); v != nil && !ok {
			t.Fatalf("%s: want null or a string, got %#v", where, v)
		}
	case "hex16":
		if s, ok := v.(string); !ok || !hex16.MatchString(s) {
			t.Fatalf("%s: want 16 lowercase hex digits, got %#v", where, v)
		}
	case "state", "policy", "substate":
		if s, ok := v.(string); !ok || !slices.Contains(words[kind], s) {
			t.Fatalf("%s: want one of %v, got %#v", where, words[kind], v)
		}
	case "pointer":
		if v != nil {
			checkObject(t, where, v, pointerFields)
		}
	case "feeds", "subscribers":
		list, ok := v.([]any)
		if !ok {
			t.Fatalf("%s: want a list, got %#v", where, v)
		}
		fields := feedFields
		if kind == "subscribers" {
			fields = subscriberFields
		}
		for _, item := range list {
			fs := fields
			if m, ok := item.(map[string]any); ok && kind == "feeds" && m["epoch"] == nil {
				if p, _ := m["path"].(string); config.IsGlob(p) {
					// §10 "Status": a glob feed's epoch, pointer.offset and
					// pointer.epoch are null.
					fs = maps.Clone(feedFields)
					delete(fs, "epoch")
					if ptr, ok := m["pointer"].(map[string]any); ok && ptr["offset"] == nil && ptr["epoch"] == nil {
						delete(fs, "pointer")
						checkValue(t, where+"[].pointer.commits", ptr["commits"], "uint")
						checkValue(t, where+"[].pointer.commitFailures", ptr["commitFailures"], "uint")
					}
				}
			}
			checkObject(t, where+"[]", item, fs)
		}
	default:
		t.Fatalf("schema: unknown kind %q", kind)
	}
}

// TestReportSchema checks every field of DESIGN §7 on a COMMITTED feed
// (pointer an object) and an EARLIEST one (pointer null), before and after
// lines flow, and a held feed (stalled a string).
func TestReportSchema(t *testing.T) {
	e := start(t, `
dataDir: %DIR%/state
status: {listen: "127.0.0.1:0"}
shutdownTimeoutMillis: 500
feeds:
  - {name: app, path: %DIR%/app.log}
  - {name: tmp, path: %DIR%/tmp.log, readStrategy: EARLIEST}
processors:
  - {name: archive, feed: app, type: file, path: %DIR%/out.log}
  - {name: other, feed: tmp, type: discard}
`, Options{})
	if err := os.WriteFile(e.dir+"/tmp.log", []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.report() // checks the schema
	e.appendLines(numbered("l", 0, 10)...)
	f := e.waitFor("settled", 10*time.Second, settled)
	if f.Pointer == nil || f.Pointer.Offset != e.inputSize() {
		t.Fatalf("pointer %+v, input %d bytes", f.Pointer, e.inputSize())
	}
	r = e.report()
	if r.Feeds[1].Pointer != nil {
		t.Fatalf("EARLIEST feed has a pointer: %+v", r.Feeds[1].Pointer)
	}
	var raw map[string]any
	_, body := e.do("GET", "/feed.status", "")
	json.Unmarshal(body, &raw)
	feeds := raw["feeds"].([]any)
	if p := feeds[1].(map[string]any)["pointer"]; p != nil {
		t.Fatalf("EARLIEST pointer = %#v, want null", p)
	}
	if d := feeds[0].(map[string]any)["deadLettered"]; d != float64(0) {
		t.Fatalf("deadLettered = %#v, want 0", d)
	}
}
