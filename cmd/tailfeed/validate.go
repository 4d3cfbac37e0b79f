package main

import (
	"flag"
	"fmt"
	"io"

	"tailfeed/config"
)

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	path := fs.String("config", "", "the config file (default: $TAILFEED_CONFIG, else ./tailfeed.yaml, else /etc/tailfeed/tailfeed.yaml)")
	if _, ok := parseFlags(fs, args, stderr); !ok || !requireConfig("validate", path, stderr) {
		return 2
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	// What `run` checks on the file system too: a feed reading a sink's
	// output, two file sinks writing one file (through a symlink or a
	// hard link), as far as this machine can see them.
	if bad := append(config.CheckOutputInputs(cfg), config.CheckOutputOutputs(cfg)...); len(bad) > 0 {
		name := cfg.Name
		if name == "" {
			name = cfg.File
		}
		for _, b := range bad {
			fmt.Fprintf(stderr, "%s:%d: %s\n", name, b.Line, b.Error())
		}
		return 2
	}
	fmt.Fprintf(stdout, "%s: ok (%d feeds, %d processors)\n", cfg.File, len(cfg.Feeds), len(cfg.Processors))
	return 0
}
