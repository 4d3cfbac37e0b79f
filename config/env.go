package config

import (
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// Environment references (DESIGN §12 "Environment").
//
// Every scalar value (never a key) may hold ${VAR} and ${VAR:-default}.
// They are expanded per scalar after the YAML is parsed, so a value can
// never change the document's structure (a variable holding "a: b" is the
// string "a: b"), and before the value is typed: an unquoted scalar is
// typed by what it expands to (`queueCapacity: ${QC:-1024}` is an
// integer, `exactlyOnce: ${EO:-false}` a boolean, an empty expansion a
// null, as if the text had been written there), a quoted one stays a
// string, as quoted text always is.
//
//   - ${VAR}: the variable's value; unset is an error at the scalar's line.
//     Set but empty gives "".
//   - ${VAR:-default}: the value, or default when VAR is unset or empty
//     (as in a shell). The default is literal text up to the first '}'.
//   - $${ is a literal ${, read left to right.
//   - Every other $ is literal: `match: "error$"` and `$VAR` are unchanged.
//
// VAR is [A-Za-z_][A-Za-z0-9_]*. Any other form after ${ (${VAR-x},
// ${VAR:?x}, a nested ${ in a default, no closing brace) is an error at
// the line.

// expandEnv expands the references in every scalar value under n, once
// per node (aliases share their anchor's node). raw keeps the text of each
// scalar that held a reference or an escape, before expansion.
func (d *decoder) expandEnv(n *yaml.Node, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			d.expandEnv(c, seen)
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 { // values only: keys are never expanded
			d.expandEnv(n.Content[i], seen)
		}
	case yaml.AliasNode:
		d.expandEnv(n.Alias, seen)
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		v, err, off := expandAt(n.Value, os.LookupEnv)
		if err != "" {
			d.errorf(refLine(n, off), "%s", err)
			if d.envFailed == nil {
				d.envFailed = map[*yaml.Node]bool{}
			}
			d.envFailed[n] = true
			return
		}
		if d.raw == nil {
			d.raw = map[*yaml.Node]string{}
		}
		d.raw[n] = n.Value
		n.Value = v
		if n.Style&yaml.TaggedStyle == 0 {
			n.Tag = "" // typed from the expanded text (yaml.Node.ShortTag resolves it)
		}
	}
}

// expand returns s with its references replaced, or a message saying what
// is wrong with one.
func expand(s string, lookup func(string) (string, bool)) (string, string) {
	v, msg, _ := expandAt(s, lookup)
	return v, msg
}

// expandAt is expand that also returns the byte offset in s of the
// reference a message is about.
func expandAt(s string, lookup func(string) (string, bool)) (string, string, int) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return "", fmt.Sprintf("%q starts an environment reference with no closing '}' (write $${ for a literal ${)", clip(s[i:])), i
			}
			ref := s[i+2 : i+end]
			name, def, hasDef := strings.Cut(ref, ":-")
			if !envName(name) {
				return "", fmt.Sprintf("${%s}: not an environment reference; want ${VAR} or ${VAR:-default} with VAR of [A-Za-z_][A-Za-z0-9_]* (write $${ for a literal ${)", clip(ref)), i
			}
			if strings.Contains(def, "${") {
				return "", fmt.Sprintf("${%s}: a default cannot hold another reference", clip(ref)), i
			}
			v, set := lookup(name)
			switch {
			case hasDef && v == "":
				v = def
			case !set:
				return "", fmt.Sprintf("environment variable %s is not set (referenced as ${%s}; give a default with ${%s:-value})", name, name, name), i
			}
			b.WriteString(v)
			i += end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), "", 0
}

func envName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// HasReference reports whether s (a value as written in the file) holds
// an environment reference ${…} (not an escaped $${).
func HasReference(s string) bool {
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			return true
		default:
			i++
		}
	}
	return false
}

// Written returns the value at key (named as in errors: "status.token",
// "processors[0].url", "processors[0].headers.X-Api-Key") as the file
// wrote it, before environment expansion; value when it held nothing to
// expand. The start-up warnings about literal secrets look at this text.
func (c *Config) Written(key, value string) string {
	if r, ok := c.raw[key]; ok {
		return r
	}
	return value
}

// refLine is the line of the reference at byte off of n's value: a literal
// block (|) keeps its line breaks, so the line can be counted; any other
// multi-line value folds them, so its first line is the best there is.
func refLine(n *yaml.Node, off int) int {
	if n.Style&yaml.LiteralStyle != 0 && off <= len(n.Value) {
		return n.Line + 1 + strings.Count(n.Value[:off], "\n")
	}
	return n.Line
}

// EnvMark stands, in FileText's result, for text the environment supplies.
const EnvMark = "\x00"

// FileText is a value as written (Written) expanded with what the
// environment supplies replaced by EnvMark: what is left is the file's own
// text — outside references, and the default of a reference whose variable
// is unset or empty. A literal secret is one whose FileText, marks left
// out, is not empty ("${PW:-secret}" with PW unset is the file's secret).
func FileText(written string) string {
	v, msg := expand(written, func(name string) (string, bool) {
		x, ok := os.LookupEnv(name)
		if ok && x != "" {
			return EnvMark, true
		}
		return x, ok
	})
	if msg != "" {
		return EnvMark // not expandable (a config error elsewhere): nothing to warn about
	}
	return v
}

// FileSupplied reports whether the file itself supplies any of a value as
// written (FileText without the environment's parts is not empty).
func FileSupplied(written string) bool {
	return strings.ReplaceAll(FileText(written), EnvMark, "") != ""
}
