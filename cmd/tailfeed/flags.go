package main

import (
	"flag"
	"fmt"
	"io"
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

// noArgs refuses positional arguments for a command that takes none
// (false: a usage error, said on stderr; the caller exits 2).
func noArgs(name string, pos []string, stderr io.Writer) bool {
	if len(pos) == 0 {
		return true
	}
	fmt.Fprintf(stderr, "tailfeed %s: unexpected argument %q (see tailfeed help %s)\n", name, pos[0], name)
	return false
}

// requireConfig resolves the config file (configPath) into *path, or
// prints where it looked.
func requireConfig(name string, path *string, stderr io.Writer) bool {
	p, err := configPath(*path)
	if err != nil {
		fmt.Fprintf(stderr, "tailfeed %s: %v\n", name, err)
		return false
	}
	*path = p
	return true
}
