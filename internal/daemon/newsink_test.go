package daemon

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/sink"
)

// ---- a hypothetical new sink, "tally": what a package sink/tally would
// hold, plus the one line `_ "tailfeed/sink/tally"` in sinks.go. It writes
// each line with its own key `prefix` in front to the common key path.

type tallySettings struct{ Prefix string }

func init() {
	sink.Register("tally", sink.Type{
		Config: config.SinkSpec{Keys: []string{"prefix"}, Output: true,
			Decode: func(s *config.Section, p *config.Processor, own bool) any {
				st := &tallySettings{}
				if line, _ := s.String("prefix", &st.Prefix); own && line == 0 {
					s.Errorf(p.Line, "%s: a tally processor needs prefix", s.Path())
				}
				return st
			}},
		New: func(env sink.Env) (any, error) {
			f, err := os.OpenFile(env.Config.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
			return &tally{f: f, prefix: env.Config.Settings.(*tallySettings).Prefix}, err
		},
	})
}

type tally struct {
	f      *os.File
	prefix string
}

func (t *tally) ProcessBatch(_ context.Context, b *feed.Batch) (int, error) {
	var out []byte
	for _, l := range b.Lines {
		out = append(append(append(out, t.prefix...), l...), '\n')
	}
	_, err := t.f.Write(out)
	return len(b.Lines), err
}

func (t *tally) Close() error { return t.f.Close() }

// ---- end of the sink.

// TestNewSinkIsOnePackage: a sink type registered from outside config/ and
// processor/ (the tally sink above) is a type the config knows, with its
// own key decoded, FILE:LINE errors, a "did you mean" for a misspelt key,
// its path checked like a file sink's; the daemon builds and runs it.
func TestNewSinkIsOnePackage(t *testing.T) {
	head := "feeds:\n  - {name: app, path: %DIR%/app.log}\nprocessors:\n  - name: t\n    feed: app\n"
	for _, c := range []struct{ body, want string }{
		{"    type: tally\n    path: out.log\n", "t.yaml:4: processors[0]: a tally processor needs prefix"},
		{"    type: tally\n    path: out.log\n    prefix: [a]\n", "t.yaml:8: processors[0].prefix: must be a string, got a list"},
		{"    type: tally\n    path: out.log\n    prefx: x\n", `t.yaml:8: unknown key "prefx" in processors[0] (did you mean "prefix"?)`},
		{"    type: tallly\n", `t.yaml:6: processors[0].type: unknown value "tallly"; want one of count, discard, file, kafka, nats, postgres, pull, stdout, tally, webhook (did you mean "tally"?)`},
		{"    type: tally\n    path: app.log\n    prefix: x\n", `t.yaml:7: processors[0].path: /d/app.log is the input of feed "app"`},
	} {
		src := strings.ReplaceAll(head, "%DIR%", "/d") + c.body
		_, err := config.Parse([]byte(src), "/d/t.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\nerr %v\nwant %s", src, err, c.want)
		}
	}
	e := start(t, head+"    type: tally\n    path: out.log\n    prefix: 'T:'\n", Options{})
	e.appendLines("a", "b", "c")
	f := e.waitFor("settled", 10*time.Second, settled)
	if f.Acknowledged != 3 {
		t.Fatalf("acknowledged %d, want 3", f.Acknowledged)
	}
	e.Stop()
	if got, want := readLines(t, filepath.Join(e.dir, "out.log")), []string{"T:a", "T:b", "T:c"}; !slices.Equal(got, want) {
		t.Fatalf("the tally sink wrote %q, want %q", got, want)
	}
}
