package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Sink types register here, the way Prometheus' service discovery
// mechanisms call discovery.RegisterConfig: config holds no list of types.
// Each package under sink/ registers its type name and SinkSpec from an
// init function (through sink.Register); a program knows the types whose
// packages it imports (the tailfeed binary imports every one, see
// internal/daemon/sinks.go). The unknown-type error lists the registered
// names.

// SinkSpec is what config knows of one sink type: its own processor keys
// and how to decode and check them. Keys shared by several types stay in
// config (see the package doc, "Common keys").
type SinkSpec struct {
	// Keys are the processor keys only this type reads (any other key not
	// common to every processor is an unknown key). Two types may declare
	// the same key; each decodes it its own way.
	Keys []string
	// Decode reads the type's keys from the processor's entry s, p holding
	// the common keys already decoded, and returns the type's settings
	// (Parse stores them in p.Settings when p is of this type). It runs on
	// every processor, own reporting whether p is of this type: a key of
	// another type is accepted on any entry and still type- and
	// range-checked there (an entry changes type by editing one line),
	// while what the type requires of its own entries (a key it cannot do
	// without, the form of a common key like url) is checked when own only.
	// Nil: the type has no keys of its own.
	Decode func(s *Section, p *Processor, own bool) any
	// Check, optional, sees the whole config once every entry was decoded,
	// for a rule across entries (two nats processors on one stream). It
	// reports through errorf, "FILE:LINE: " added.
	Check func(cfg *Config, errorf func(line int, format string, args ...any))

	// OwnURL: the type checks the common key url itself in Decode; on
	// other entries url must be an http(s) URL with a host.
	OwnURL bool
	// Formats: the type writes lines as format (raw | json); on other
	// types format is an error.
	Formats bool
	// Output: the type writes the file at path. Such a path may not be a
	// feed's input, tailfeed's own state or another Output entry's path.
	Output bool
}

var (
	sinksMu sync.RWMutex
	sinks   = map[string]SinkSpec{}
)

// RegisterSink makes a sink type known to the config under name (the
// processors' type). It panics on a second registration of a name, and
// on a key that is common to every processor, as http.Handle does on a
// bad pattern: both are bugs of the program, not of a config file.
func RegisterSink(name string, spec SinkSpec) {
	sinksMu.Lock()
	defer sinksMu.Unlock()
	if _, dup := sinks[name]; dup {
		panic(fmt.Sprintf("config: sink type %q registered twice", name))
	}
	if name == "" || !validName.MatchString(name) {
		panic(fmt.Sprintf("config: sink type %q is not a name", name))
	}
	for _, k := range spec.Keys {
		if slices.Contains(commonProcessorKeys, k) {
			panic(fmt.Sprintf("config: sink type %q declares the common key %q", name, k))
		}
	}
	sinks[name] = spec
}

// SinkTypes returns the registered type names, sorted.
func SinkTypes() []string {
	sinksMu.RLock()
	defer sinksMu.RUnlock()
	return sortedKeys(sinks)
}

// sinkSpec returns the spec of type name (ok false when none).
func sinkSpec(name string) (SinkSpec, bool) {
	sinksMu.RLock()
	defer sinksMu.RUnlock()
	s, ok := sinks[name]
	return s, ok
}

// processorKeys are the keys a processor entry may hold: the common ones
// and every registered type's.
func processorKeys() []string {
	keys := slices.Clone(commonProcessorKeys)
	for _, name := range SinkTypes() {
		s, _ := sinkSpec(name)
		for _, k := range s.Keys {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// typesWith lists the registered types whose spec has the property, as
// prose ("file and stdout").
func typesWith(has func(SinkSpec) bool) string {
	var names []string
	for _, n := range SinkTypes() {
		if s, _ := sinkSpec(n); has(s) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return "no"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// OutputPath is the file processor p writes (its type's spec has Output),
// "" when it writes none.
func (p *Processor) OutputPath() string {
	if s, ok := sinkSpec(p.Type); ok && s.Output {
		return p.Path
	}
	return ""
}
