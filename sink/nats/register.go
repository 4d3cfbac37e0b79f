package nats

import (
	"os"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/internal/redact"
	"tailfeed/sink"
)

func init() {
	sink.Register(Type, sink.Type{New: open,
		Config: config.SinkSpec{Keys: keys, Decode: decode, Check: checkStreams, OwnURL: true},
		Describe: func(pc *config.Processor) []any {
			n := settings(pc)
			return []any{"target", "nats stream " + n.Stream + " subject " + n.Subject + " at " + redact.URLList(pc.URL), "exactlyOnce", pc.ExactlyOnce}
		},
		// The subject as written: a template over {instance} stays the
		// same target when instance changes (DESIGN §12 lists the keys).
		Target: func(pc *config.Processor) string {
			n := settings(pc)
			return n.Stream + "\x00" + n.Subject
		},
		Instance: true,
		Files:    files})
}

// files checks that credsFile can be read (sink.Type.Files): a missing one
// is a config error at start, like a missing tls file.
func files(pc *config.Processor) (string, int, error) {
	n := settings(pc)
	if n.CredsFile == "" {
		return "", 0, nil
	}
	if _, err := os.ReadFile(n.CredsFile); err != nil {
		return "credsFile", n.credsLine, err
	}
	return "", 0, nil
}

func open(env sink.Env) (any, error) {
	pc := env.Config
	n := settings(pc)
	return Open(Config{
		Group:        env.Group,
		URL:          pc.URL,
		Stream:       n.Stream,
		Subject:      n.Subject,
		CreateStream: n.CreateStream,
		ExactlyOnce:  pc.ExactlyOnce,
		Instance:     env.Instance,
		TLS:          n.TLS,
		CredsFile:    n.CredsFile,
		Token:        n.Token,
		Literal:      n.Literal,
		Timeout:      pc.Built.Timeout,
		Window:       pc.BatchMaxLines,
		Feed:         env.Feed.Name,
		MarksFile:    datadir.Record(env.DataDir, pc.Name),
		EpochsFile:   datadir.Epochs(env.DataDir, env.Feed.Name),
		Logger:       env.Logger,
	})
}
