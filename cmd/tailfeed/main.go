// Command tailfeed tails log files and delivers every line to subscribers,
// committing a crash-safe pointer only after every subscriber has processed
// the line. See README.md and DESIGN §7 for the commands.
package main

import (
	"fmt"
	"io"
	"os"
)

// version is set at build time (-ldflags "-X main.version=…").
var version = "0.1.0-dev"

const usage = `usage:
  tailfeed run [--config FILE]
  tailfeed validate [--config FILE]
  tailfeed status [--addr HOST:PORT|URL] [--wait-settled DURATION] [--json] [--ca FILE] [--cert FILE --key FILE]
  tailfeed pointer show FILE [--json]
  tailfeed version
  tailfeed help [COMMAND]
`

func main() {
	os.Exit(mainWith(os.Args[1:], os.Stdout, os.Stderr))
}

func mainWith(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if helpArg(args[1:]) {
		return cmdHelp(args[:1], stdout, stderr)
	}
	return dispatch(args, stdout, stderr)
}

// dispatch runs the command args[0].
func dispatch(args []string, stdout, stderr io.Writer) int {
	switch args[0] {
	case "run":
		return cmdRun(args[1:], stderr)
	case "validate":
		return cmdValidate(args[1:], stdout, stderr)
	case "status":
		return cmdStatus(args[1:], stdout, stderr)
	case "pointer":
		return cmdPointer(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		if !noArgs("version", args[1:], stderr) {
			return 2
		}
		fmt.Fprintf(stdout, "tailfeed %s\n", version)
		return 0
	case "help":
		return cmdHelp(args[1:], stdout, stderr)
	case "-h", "-help", "--help":
		return cmdHelp(nil, stdout, stderr)
	}
	fmt.Fprintf(stderr, "tailfeed: unknown command %q\n%s", args[0], usage)
	return 2
}
