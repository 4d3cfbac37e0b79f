// Package file is the `file` sink (DESIGN §6): it appends each line's raw
// bytes plus '\n' to an output file, one write(2) per batch, under an
// fsync policy (always, interval, never), and, with exactlyOnce, keeps a
// side record (exactlyonce.go: its layout and the rules at open) so that a
// restart neither duplicates nor loses a line of the output.
//
// With `format: json` it writes internal/ndjson's object per line (the
// webhook's) instead of the raw bytes. Everything else is about the bytes
// written, whatever they are: one write per batch, the truncations, the
// fsyncs, the torn-tail cut (every object ends with '\n'; JSON escapes a
// newline in a line) and the exactlyOnce record, whose length is the
// output's, JSON included.
//
// The exactlyOnce record is also the sink's done-through mark (DESIGN §11,
// DoneThrough): it advances over every line of the feed the sink finished
// without writing it (the group's filters, a dead letter, a release: a
// view's feed.Batch.Through, or an empty batch), never over a replayed dead
// letter; at start the daemon compares it with the pointer and, when it is
// behind (an output and record restored from an earlier copy), re-reads the
// input from it. With a one-epoch record (layout 1, a single-file feed), a
// line of an older epoch that the feed's epochs file shows committed
// before the record's epoch began (pointer.HeldBefore: every subscriber
// had finished it) is skipped as applied and the record stays: a catch-up
// for another sink that re-reads older generations does not write them,
// nor the current file after them, a second time. Downgraded lines (no
// position) are written again.
package file
