package main

import (
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
)

// newLogger is the daemon's logger, at the level and in the format of the
// log section l; the func it returns applies another log section (a
// reload: DESIGN §12 "If valid, the difference is applied without a
// restart") to it and to every logger derived from it (Named, With), from
// the next line on.
//
// hclog fixes a logger's format when it is built, so the logger is an
// intercept logger that writes nothing itself (it keeps the level, for
// IsDebug and the like) and hands every line to one sink: a logger of the
// current level and format, which a reload replaces whole.
func newLogger(out io.Writer, l config.Log) (hclog.Logger, func(config.Log)) {
	var mu sync.Mutex // one line at a time, whichever sink writes it
	build := func(l config.Log) *hclog.SinkAdapter {
		s := hclog.NewSinkAdapter(&hclog.LoggerOptions{
			Level:      hclog.LevelFromString(l.Level),
			JSONFormat: l.Format == "json",
			Output:     out,
			Mutex:      &mu,
		})
		return &s
	}
	sink := &switchSink{}
	sink.cur.Store(build(l))
	root := hclog.NewInterceptLogger(&hclog.LoggerOptions{
		Name:    "tailfeed",
		Level:   hclog.LevelFromString(l.Level),
		Output:  io.Discard,
		Exclude: func(hclog.Level, string, ...interface{}) bool { return true }, // the sink writes
	})
	root.RegisterSink(sink)
	return root, func(l config.Log) {
		sink.cur.Store(build(l))
		root.SetLevel(hclog.LevelFromString(l.Level))
	}
}

// switchSink hands each line to the sink in use.
type switchSink struct {
	cur atomic.Pointer[hclog.SinkAdapter]
}

func (s *switchSink) Accept(name string, level hclog.Level, msg string, args ...interface{}) {
	(*s.cur.Load()).Accept(name, level, msg, args...)
}
