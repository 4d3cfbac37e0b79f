// Package count is the `count` processor (DESIGN §6), a stateful example:
// it counts lines per value of the named group `key` of its `match` regexp
// (per whole line when there is no such group, or no match regexp). For
// count, match selects what is counted and is not a filter: a line that
// does not match is finished without being counted.
//
// The counts and, per feed, the (epoch, position) of the last line applied
// are kept in memory and saved together, atomically, to
// dataDir/state/count/<processor>.json (CountState; temp file, fsync, rename,
// fsync of the directory) at most fsyncIntervalMillis after the first
// unsaved change — not per line. The queue's ack point waits for the save
// (a checkpoint hold), so the pointer never passes a line whose count is
// not on disk, and a line the saved state already covers (same epoch,
// position ≤ the saved one) is skipped when it is delivered again after a
// restart: the counts after any number of kill -9 equal a clean run's.
// Count keeps its (epoch, position) and skips re-deliveries whatever
// `exactlyOnce` says. The applied position advances over lines the group
// finished without the count (its `exclude`, a release), never over a
// replayed line; it is the count's done-through mark at start (DESIGN §11,
// DoneThrough): a state restored from an earlier copy is caught up from the
// input. GET /v1/state/{processor} serves the same JSON:
//
//	{"v":1,"processor":"counter","type":"count","counts":{"red":51},
//	 "feeds":{"app":{"epoch":"00c3a1d2e4f50617","position":1234}}}
//
// "v" is the format version (StateFormat): a file without it reads as 1, a
// newer one is refused at open (ErrStateVersion, naming the file).
//
// Keys are text: an invalid UTF-8 byte becomes U+FFFD (as in every JSON
// output), so a key reads back from the state file exactly as it was
// counted.
package count
