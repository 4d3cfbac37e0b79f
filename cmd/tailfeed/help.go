package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// A command's help (DESIGN §12 "People"): `tailfeed help [command]`,
// `tailfeed <command> --help` and `-h` print it and exit 0.
type helpText struct {
	synopsis string // the usage line
	about    string // what it does
	exits    string // its exit codes
	// flags, when set, asks the command itself for its flags: the args it
	// is run with so that its flag set meets -help (and prints its
	// defaults) before it does anything.
	flags []string
}

var helps = map[string]helpText{
	"run": {
		synopsis: "tailfeed run [--config FILE]",
		about: `Runs the daemon: tails every feed's input and delivers each line to the
processors that read it, committing the feed's pointer only after every
subscriber processed the line. Serves feed.status, health, metrics, pull and
admin on status.listen. SIGTERM/SIGINT stop it (drain, final commit); a second
signal exits at once. SIGHUP (or POST /admin/reload) reloads the config file:
an invalid one changes nothing. Without --config it reads $TAILFEED_CONFIG, else
./tailfeed.yaml, else /etc/tailfeed/tailfeed.yaml. TAILFEED_TOKEN overrides
status.token.`,
		exits: `  0  stopped cleanly after SIGTERM/SIGINT
  1  a failure at start (port in use, dataDir locked by another process) or a
     failed final commit
  2  a config error (FILE:LINE: message), an unusable dataDir, a feed path that
     is a directory`,
		flags: []string{"--help"},
	},
	"validate": {
		synopsis: "tailfeed validate [--config FILE]",
		about: `Checks a config file without running it: YAML syntax, keys, types, enums,
names, references, regular expressions, ${VAR} references. Prints every
problem as FILE:LINE: message. It does not look at the inputs (a directory
path passes here and fails at run). The file is found as for run.`,
		exits: `  0  valid
  2  invalid, or no config file found`,
		flags: []string{"--help"},
	},
	"status": {
		synopsis: "tailfeed status [--addr HOST:PORT|URL] [--wait-settled DURATION] [--json] [--ca FILE] [--cert FILE --key FILE]",
		about: `Asks a running daemon for its feed.status and applies the launcher rule:
is the run complete (settled) and whole (lossless)? Prints a summary (or the
JSON with --json); stderr says why when it is not 0. TAILFEED_TOKEN, when set,
is sent as a bearer token. For a daemon with status.tls: --ca verifies its
certificate (HOST:PORT then means https), --cert/--key present a client
certificate when it sets clientCAFile.`,
		exits: `  0  every feed settled and lossless
  1  settled but lossy
  2  unreachable, or the answer is not a feed.status report
  3  not settled within --wait-settled
  4  a feed is FAILED (at once, whatever --wait-settled says)`,
		flags: []string{"--help"},
	},
	"pointer": {
		synopsis: "tailfeed pointer show FILE [--json]",
		about: `Prints a pointer file (dataDir/feeds/<feed>.ptr, or a glob feed's
dataDir/feeds/<feed>/<epoch>.ptr): offset, epoch, fileKey, fingerprintLength,
fingerprint, commits, the slot in force and the layout. Takes no lock: it may
be read while the daemon runs.`,
		exits: `  0  printed
  1  no valid slot, or the file cannot be read or is shorter than 1,024 bytes
  2  bad usage`,
		flags: []string{"show", "--help"},
	},
	"version": {
		synopsis: "tailfeed version",
		about:    "Prints the version.",
		exits:    "  0  always",
	},
	"help": {
		synopsis: "tailfeed help [COMMAND]",
		about:    "Describes tailfeed's commands, or one of them.",
		exits:    "  0  printed\n  2  unknown command",
	},
}

var commandOrder = []string{"run", "validate", "status", "pointer", "version", "help"}

// helpArg reports whether args ask for help (-h, -help, --help) before a
// "--".
func helpArg(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// cmdHelp is `tailfeed help [command]`.
func cmdHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, "tailfeed tails log files and delivers every line to subscribers, committing\na crash-safe pointer only after every subscriber processed the line.\n\ncommands:\n")
		for _, name := range commandOrder {
			fmt.Fprintf(stdout, "  %s\n", helps[name].synopsis)
		}
		fmt.Fprint(stdout, "\n'tailfeed help COMMAND' or 'tailfeed COMMAND --help' describes one.\n")
		return 0
	}
	h, ok := helps[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tailfeed help: unknown command %q\n%s", args[0], usage)
		return 2
	}
	fmt.Fprintf(stdout, "usage: %s\n\n%s\n", h.synopsis, h.about)
	if h.flags != nil {
		fmt.Fprintf(stdout, "\nflags:\n%s", commandFlags(args[0], h.flags))
	}
	fmt.Fprintf(stdout, "\nexit codes:\n%s\n", h.exits)
	return 0
}

// commandFlags runs the command with its -help arguments and keeps what
// its flag set printed: every flag with its default, whichever file
// defines them.
func commandFlags(name string, args []string) string {
	var out, errb bytes.Buffer
	dispatch(append([]string{name}, args...), &out, &errb)
	var b strings.Builder
	for _, l := range strings.SplitAfter(errb.String(), "\n") {
		if strings.HasPrefix(l, "Usage of ") || strings.HasPrefix(l, "usage:") || l == "" {
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}
