package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// document parses data into the single YAML document of a config and returns
// its top-level node, or nil after reporting why there is none.
func (d *decoder) document(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := decodeNode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.errorf(0, "empty document: the config defines nothing (at least one feed is needed)")
		} else {
			d.syntaxError(err, data)
		}
		return nil
	}
	top := doc.Content[0]
	// A second document is an error unless it is empty (a trailing "---").
	var next yaml.Node
	if err := decodeNode(dec, &next); err != nil && !errors.Is(err, io.EOF) {
		d.syntaxError(err, data)
	} else if err == nil && !isNull(next.Content[0]) {
		d.errorf(next.Content[0].Line, "a config is one YAML document; found a second one")
	}
	if isNull(top) {
		d.errorf(top.Line, "empty document: the config defines nothing (at least one feed is needed)")
		return nil
	}
	return top
}

// decodeNode decodes the next document into n. yaml.v3 is not supposed to
// panic, but a config must never crash the daemon: a panic becomes an error.
func decodeNode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: cannot parse: %v", r)
		}
	}()
	if err := dec.Decode(n); err != nil {
		return err
	}
	if n.Kind != yaml.DocumentNode || len(n.Content) == 0 {
		return fmt.Errorf("yaml: cannot parse: no document node")
	}
	return nil
}

var yamlLine = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)

// syntaxError reports a yaml.v3 parse error at the best line it can find.
// yaml.v3 omits the line when the problem is on line 1 and reports the
// parser's (not the scanner's) problems with 0-based lines; both are mended.
func (d *decoder) syntaxError(err error, data []byte) {
	msg, line := err.Error(), 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if parserProblem(msg) {
			line++
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		switch {
		case readerProblem(msg):
			line = badCharLine(data)
		case strings.HasPrefix(msg, "unknown anchor '"):
			line = aliasLine(data, strings.TrimSuffix(strings.TrimPrefix(msg, "unknown anchor '"), "' referenced"))
		case strings.HasPrefix(msg, "cannot parse"):
			// not from the YAML parser: no line to trust
		default:
			line = 1 // the parser dropped a 0-based line 0
		}
	}
	if strings.Contains(msg, "tab character") {
		line = tabLine(data, line)
	}
	d.errorf(line, "YAML syntax error: %s", msg)
}

func parserProblem(msg string) bool {
	return strings.HasPrefix(msg, "did not find expected") ||
		strings.HasPrefix(msg, "found duplicate %") ||
		msg == "found incompatible YAML document" ||
		msg == "found undefined tag handle"
}

func readerProblem(msg string) bool {
	return strings.Contains(msg, "UTF-8") || strings.Contains(msg, "UTF-16") ||
		strings.Contains(msg, "surrogate") || strings.Contains(msg, "control characters") ||
		strings.HasPrefix(msg, "input error")
}

// badCharLine is the line of the first byte sequence YAML refuses (invalid
// UTF-8 or a character outside YAML's printable set); 0 if none is found or
// the input is UTF-16.
func badCharLine(data []byte) int {
	if bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0xFE, 0xFF}) {
		return 0
	}
	line := 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 || !yamlPrintable(r) {
			return line
		}
		if r == '\n' {
			line++
		}
		i += size
	}
	return 0
}

func yamlPrintable(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D || (r >= 0x20 && r <= 0x7E) || r == 0x85 ||
		(r >= 0xA0 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

// aliasLine is the line of the first "*name" alias in data, or 0.
func aliasLine(data []byte, name string) int {
	if name == "" {
		return 0
	}
	for i, l := range bytes.Split(data, []byte("\n")) {
		for rest := l; ; {
			j := bytes.Index(rest, []byte("*"+name))
			if j < 0 {
				break
			}
			end := rest[j+1+len(name):]
			if len(end) == 0 || bytes.ContainsAny(end[:1], " \t,]}\r#") {
				return i + 1
			}
			rest = rest[j+1:]
		}
	}
	return 0
}

// tabLine is the first line at or after from (or line 1) whose indentation
// holds a tab, or from when there is none.
func tabLine(data []byte, from int) int {
	for i, l := range bytes.Split(data, []byte("\n")) {
		if i+1 < from {
			continue
		}
		indent := l[:len(l)-len(bytes.TrimLeft(l, " \t"))]
		if bytes.IndexByte(indent, '\t') >= 0 && len(bytes.TrimSpace(l)) > 0 {
			return i + 1
		}
	}
	return from
}
