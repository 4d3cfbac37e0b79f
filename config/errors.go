package config

import (
	"sort"
	"strconv"
	"strings"
)

// Error is one problem in a config file, at a line when one is known.
type Error struct {
	File string // the config file's name as given to Load or Parse
	Line int    // 1-based; 0 when the problem has no line (a missing file, an empty document)
	Msg  string // what is wrong, quoting the YAML key
	Err  error  // the underlying error, if any (for example fs.ErrNotExist); may be nil
}

// Error formats the problem as "FILE:LINE: message", or "FILE: message" without a line.
func (e *Error) Error() string {
	if e.Line > 0 {
		return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Msg
	}
	return e.File + ": " + e.Msg
}

// Unwrap returns the underlying error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem found in one config file, sorted by line. Load and
// Parse return a non-empty *Errors as their error.
type Errors []*Error

// Error joins the problems one per line, each as "FILE:LINE: message".
func (e *Errors) Error() string {
	if e == nil || len(*e) == 0 {
		return "config: no errors"
	}
	lines := make([]string, len(*e))
	for i, err := range *e {
		lines[i] = err.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the members to errors.Is and errors.As.
func (e *Errors) Unwrap() []error {
	if e == nil {
		return nil
	}
	out := make([]error, len(*e))
	for i, err := range *e {
		out[i] = err
	}
	return out
}

// finish sorts the list by line (problems without a line first, then in the
// order found) and drops exact repeats, which YAML aliases can produce.
func (e Errors) finish() Errors {
	sort.SliceStable(e, func(i, j int) bool { return e[i].Line < e[j].Line })
	out := e[:0]
	seen := make(map[string]bool, len(e))
	for _, err := range e {
		k := err.Error()
		if !seen[k] {
			seen[k] = true
			out = append(out, err)
		}
	}
	return out
}
