package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"tailfeed/pointer"
	"tailfeed/status"
)

func cmdPointer(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "show" {
		fmt.Fprintln(stderr, "usage: tailfeed pointer show FILE [--json]")
		return 2
	}
	fs := flag.NewFlagSet("pointer show", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, ok := parseFlags(fs, args[1:], stderr)
	if !ok || len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: tailfeed pointer show FILE [--json]")
		return 2
	}
	rec, err := pointer.Inspect(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "tailfeed pointer show: %s: %v\n", pos[0], err)
		return 1
	}
	if *asJSON {
		out := map[string]any{
			"offset":            rec.Offset,
			"epoch":             status.Hex(rec.Epoch),
			"fileKey":           status.Hex(rec.FileKey),
			"fingerprintLength": rec.FPLen,
			"fingerprint":       status.Hex(rec.FP),
			"commits":           rec.Commits,
			"slot":              string(rec.Slot),
			"layout":            rec.Layout,
		}
		b, _ := json.Marshal(out)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	fmt.Fprintf(stdout, "offset: %d\nepoch: %s\nfileKey: %s\nfingerprintLength: %d\nfingerprint: %s\ncommits: %d\nslot: %c\nlayout: %d\n",
		rec.Offset, status.Hex(rec.Epoch), status.Hex(rec.FileKey), rec.FPLen, status.Hex(rec.FP), rec.Commits, rec.Slot, rec.Layout)
	return 0
}
