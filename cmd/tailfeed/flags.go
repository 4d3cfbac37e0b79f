package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// parseFlags parses args with fs, allowing flags after positional arguments;
// it returns the positional ones.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) ([]string, bool) {
	fs.SetOutput(stderr)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, true
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func requireConfig(name, path string, stderr io.Writer) bool {
	if strings.TrimSpace(path) == "" {
		fmt.Fprintf(stderr, "tailfeed %s: --config FILE is required\n", name)
		return false
	}
	return true
}
