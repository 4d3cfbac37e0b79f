package nats

import (
	"tailfeed/internal/datadir"
	"tailfeed/sink"
)

func init() {
	sink.Register("nats", sink.Type{New: open})
}

func open(env sink.Env) (any, error) {
	pc := env.Config
	return Open(Config{
		Group:        env.Group,
		URL:          pc.URL,
		Stream:       pc.Nats.Stream,
		Subject:      pc.Nats.Subject,
		CreateStream: pc.Nats.CreateStream,
		ExactlyOnce:  pc.ExactlyOnce,
		Instance:     env.Instance,
		TLS:          pc.Nats.TLS,
		CredsFile:    pc.Nats.CredsFile,
		Token:        pc.Nats.Token,
		Timeout:      pc.Built.Timeout,
		Window:       pc.BatchMaxLines,
		Feed:         env.Feed.Name,
		MarksFile:    datadir.Record(env.DataDir, pc.Name),
		Logger:       env.Logger,
	})
}
