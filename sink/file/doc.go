// Package file is the `file` sink (DESIGN §6): it appends each line's raw
// bytes plus '\n' to an output file, one write(2) per batch, under an
// fsync policy (always, interval, never), and, with exactlyOnce, keeps a
// side record (exactlyonce.go: its layout and the rules at open) so that a
// restart neither duplicates nor loses a line of the output.
package file
