// Package sink is the registry of sink types. Each type lives in its own
// package under sink/ and registers itself from an init function, the way
// Prometheus' service discovery mechanisms call discovery.RegisterConfig:
// its config keys and decoder (Type.Config, handed to config.RegisterSink)
// and its constructor. internal/daemon imports every sink package for that
// (internal/daemon/sinks.go) and builds every configured processor through
// Lookup. A sink is built on processor.Host, the narrow seam to its group:
// adding a sink is one package and one import line there, and touches
// neither processor/ nor config/ nor the daemon's code.
package sink

import (
	"fmt"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/processor"
	"tailfeed/status"
)

// Env is what a sink's constructor gets.
type Env struct {
	Group     processor.Host    // the subscriber's group: the sink's only handle on it
	Config    *config.Processor // the processor's entry
	Feed      *config.Feed      // the feed it reads
	Publisher *feed.Publisher   // the feed's publisher
	DataDir   string
	Instance  string       // the sidecar's instance (DESIGN §11), in every engine-side identity
	Logger    hclog.Logger // named after the processor
	// Previous is the processor's sink in the feed's instance a reload
	// just stopped to restart the feed (closed; nil: none, or another
	// type): a sink may take over what it still held (pull: deliveries in
	// flight).
	Previous any
}

// Type is one sink type.
type Type struct {
	// New builds the sink: a processor.BatchProcessor or a
	// processor.Processor, and optionally a processor.Closer (closed at
	// stop), processor.Flusher, processor.HoldReleaser and so on.
	New func(env Env) (any, error)
	// Routes, optional, are the HTTP routes the type serves (pull's
	// /v1/pull). sinkOf finds the sink of a processor by name (nil: none).
	Routes func(sinkOf func(name string) any) map[string]status.Route
	// OwnMatch: the sink applies `match` itself (count: its named group
	// `key`); the group filters only by `exclude`.
	OwnMatch bool
	// Config is what the config knows of the type: its own keys, their
	// decoder and checks (registered with config.RegisterSink).
	Config config.SinkSpec
	// Describe, optional, is what a processor of this type writes to or
	// serves, as log key-values for the start-up log (never a secret).
	Describe func(pc *config.Processor) []any
	// Target, optional, names where a processor's durable state lives
	// (file path, webhook url, postgres dsn and table, kafka topic and
	// offsetsTopic, nats stream and subject): a reload that changes it
	// starts the processor afresh. Nil: only a change of type is a new
	// target.
	Target func(pc *config.Processor) string
	// Instance: the type puts Env.Instance in an engine-side identity
	// (DESIGN §11), so a reload that changes the config's instance
	// changes its processors (rebuilt with the new one; their Target is
	// what decides whether their state is kept).
	Instance bool
	// Files, optional, checks at start the files a processor's own keys
	// name (nats credsFile) as the daemon checks every processor's tls
	// files: one missing or unreadable is a config error at its line
	// (exit 2). It returns the key at fault ("credsFile") and its line.
	Files func(pc *config.Processor) (key string, line int, err error)
}

var (
	mu    sync.Mutex
	types = map[string]Type{}
)

// Register makes a sink type available under name (the config's `type`).
// It panics on a second registration of a name, as http.Handle does.
func Register(name string, t Type) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := types[name]; dup {
		panic(fmt.Sprintf("sink: type %q registered twice", name))
	}
	if t.New == nil {
		panic(fmt.Sprintf("sink: type %q has no constructor", name))
	}
	config.RegisterSink(name, t.Config)
	types[name] = t
}

// Lookup returns the sink type registered under name.
func Lookup(name string) (Type, bool) {
	mu.Lock()
	defer mu.Unlock()
	t, ok := types[name]
	return t, ok
}

// Routes collects the HTTP routes of every registered type.
func Routes(sinkOf func(name string) any) map[string]status.Route {
	mu.Lock()
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, n)
	}
	mu.Unlock()
	sort.Strings(names)
	out := map[string]status.Route{}
	for _, n := range names {
		t, _ := Lookup(n)
		if t.Routes == nil {
			continue
		}
		for p, r := range t.Routes(sinkOf) {
			if _, dup := out[p]; dup {
				panic(fmt.Sprintf("sink: route %s registered twice (type %s)", p, n))
			}
			out[p] = r
		}
	}
	return out
}
