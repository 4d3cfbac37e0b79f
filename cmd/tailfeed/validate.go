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
	if pos, ok := parseFlags(fs, args, stderr); !ok || !noArgs("validate", pos, stderr) || !requireConfig("validate", path, stderr) {
		return 2
	}
	cfg, err := config.Load(*path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	fmt.Fprintf(stdout, "%s: ok (%d feeds, %d processors)\n", cfg.File, len(cfg.Feeds), len(cfg.Processors))
	return 0
}
