package testutil

import "strings"

// Lines joins its arguments into a YAML document, one per line: line N
// of the document is argument N-1 (for tests that expect "FILE:LINE: …").
func Lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }
