package config

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Section is one mapping of the config file as a sink type's Decode sees
// it (a processor's entry, or a mapping inside it): typed accessors over
// the same decoding the rest of the file gets. Values have had their
// ${VAR} references expanded (DESIGN §12), and the text as written is kept
// for Config.Written. A bad value is reported as "FILE:LINE: path.key:
// message" and leaves the destination unchanged. Every accessor returns
// the key's line (0 when the key is absent or null) and whether it set the
// destination.
type Section struct{ o *obj }

// Path names the section in messages: "processors[0]".
func (s *Section) Path() string { return s.o.path }

// At names key of the section in messages: "processors[0].topic".
func (s *Section) At(key string) string { return s.o.at(key) }

// Line is the line of the section (a list entry's "- name:" line).
func (s *Section) Line() int { return s.o.line }

// KeyLine is the line of key, 0 when it is absent or null.
func (s *Section) KeyLine(key string) int {
	e, found := s.o.m[key]
	if !found || isNull(e.val) {
		return 0
	}
	return e.key.Line
}

// Written is the value at key as the file wrote it, before ${VAR}
// expansion ("" when the key is absent, null or not a scalar): a start-up
// WARN about a literal secret looks at it (HasReference).
func (s *Section) Written(key string) string {
	e, found := s.o.m[key]
	if !found || isNull(e.val) {
		return ""
	}
	n := resolve(e.val)
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	if r, ok := s.o.d.raw[n]; ok {
		return r
	}
	return n.Value
}

// Errorf reports a problem at line ("FILE:LINE: " is added).
func (s *Section) Errorf(line int, format string, args ...any) { s.o.d.errorf(line, format, args...) }

// String sets *dst from any scalar (a number or boolean as written).
func (s *Section) String(key string, dst *string) (int, bool) { return s.o.str(key, dst) }

// NonEmpty is String for keys where "" is not a value.
func (s *Section) NonEmpty(key string, dst *string) (int, bool) { return s.o.nonEmpty(key, dst) }

// FilePath sets *dst to the cleaned absolute form of a path (relative to
// the config file's directory).
func (s *Section) FilePath(key string, dst *string) (int, bool) { return s.o.filePath(key, dst) }

// Int sets *dst from a YAML integer within [min, max].
func (s *Section) Int(key string, dst *int, min, max int) (int, bool) {
	return s.o.integer(key, dst, min, max)
}

// Millis is Int for a duration in milliseconds: positive, at most a year.
func (s *Section) Millis(key string, dst *int) (int, bool) {
	return s.o.integer(key, dst, 1, maxMillis)
}

// Bool sets *dst from true or false.
func (s *Section) Bool(key string, dst *bool) (int, bool) { return s.o.boolean(key, dst) }

// Number sets *dst from a YAML integer or float within [min, max].
func (s *Section) Number(key string, dst *float64, min, max float64) (int, bool) {
	return s.o.number(key, dst, min, max)
}

// Enum sets *dst from one of values (case-sensitive, with a "did you
// mean" hint for a near miss).
func (s *Section) Enum(key string, dst *string, values []string) (int, bool) {
	return s.o.enum(key, dst, values, nil)
}

// Sub returns the mapping at key checked against its known keys (any key
// when known is nil), or nil when it is absent, null or not a mapping
// (reported).
func (s *Section) Sub(key string, known []string) *Section {
	o := s.o.sub(key, known)
	if o == nil {
		return nil
	}
	return &Section{o}
}

// Item is one entry of a list.
type Item struct {
	n *yaml.Node
	// At names it in messages: "processors[0].brokers[1]".
	At   string
	Line int
}

// Scalar is the item's text, ok false when it is not a scalar.
func (it Item) Scalar() (string, bool) {
	if it.n == nil || it.n.Kind != yaml.ScalarNode {
		return "", false
	}
	return it.n.Value, true
}

// Describe names the item's type and value for "got …" in messages.
func (it Item) Describe() string { return describe(it.n) }

// List returns the items of the list at key (none when absent or null; ok
// false when the value is not a list, reported).
func (s *Section) List(key string) (items []Item, line int, ok bool) {
	nodes, line, ok := s.o.list(key)
	for i, n := range nodes {
		n = resolve(n)
		at := fmt.Sprintf("%s[%d]", s.o.at(key), i)
		l := line
		if n != nil {
			l = n.Line
		}
		items = append(items, Item{n: n, At: at, Line: l})
	}
	return items, line, ok
}

// Clip shortens a value quoted in a message (at most 60 bytes).
func Clip(v string) string { return clip(v) }
