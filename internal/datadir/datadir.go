// Package datadir names every path tailfeed keeps under its dataDir, in
// one place (as etcd's server/storage/datadir does):
//
//	<dataDir>/LOCK                   the lock file (flock; holds the PID)
//	<dataDir>/.write-test            the write probe at start (removed at once)
//	<dataDir>/losses.jsonl           the losses ledger (DESIGN §7)
//	<dataDir>/losses.jsonl.tmp       its rewrite, renamed over it
//	<dataDir>/feeds/<feed>.ptr       a COMMITTED feed's pointer
//	<dataDir>/feeds/<feed>.epochs    the feed's epoch history
//	<dataDir>/feeds/<feed>/<epoch>.ptr a glob feed's per-file pointers (DESIGN §10)
//	<dataDir>/feeds/<feed>/unread.list a glob feed's files never read (waiting for a turn) at a stop
//	<dataDir>/dlq/<processor>.jsonl  a processor's dead-letter ledger
//	<dataDir>/state/<processor>.rec  an exactlyOnce file sink's or a webhook's record
//	<dataDir>/state/count/<processor>.json a count processor's state
//	<dataDir>/state/removed.json     removed subscribers' holds (DESIGN §12 "Reload") and kept marks
//	<dataDir>/state/released.json    lines a subscriber was released from while its sink could not record them
//	<dataDir>/state/<processor>.rec  also a nats sink's JSON side record
//	<dataDir>/state/<processor>.<time>.old/  a changed processor's state moved aside (a reload, or a start)
//	<dataDir>/state/targets/<processor>.target the target a processor's state belongs to (a hash)
//	<dataDir>/feeds/<feed>.ptr.<epoch>.old   a feed's pointer moved aside when its path changed
//	<dataDir>/feeds/<feed>.epochs.<epoch>.old its epoch history, moved aside with it
//
// Nothing else under dataDir is tailfeed's.
package datadir

import (
	"path/filepath"
	"strings"
)

// Names directly under dataDir.
const (
	Lock       = "LOCK"
	WriteProbe = ".write-test"
	Losses     = "losses.jsonl"
	Feeds      = "feeds"
	DLQ        = "dlq"
	State      = "state"
)

// Dirs are tailfeed's directories under dataDir, created 0700 at start.
var Dirs = []string{Feeds, DLQ, State}

// Suffixes of the files tailfeed keeps in each of its directories ("" for any).
var Suffixes = map[string][]string{
	Feeds: {".ptr", ".epochs", ".old"},
	DLQ:   {".jsonl", ".jsonl.tmp"},
	State: {""},
}

// Top reports whether name (directly under dataDir) is tailfeed's.
func Top(name string) bool {
	switch name {
	case Lock, WriteProbe, Losses, Losses + ".tmp", Feeds, DLQ, State:
		return true
	}
	return false
}

// LockPath is dataDir/LOCK.
func LockPath(dataDir string) string { return filepath.Join(dataDir, Lock) }

// WriteProbePath is the file created and removed at start to check that
// dataDir is writable.
func WriteProbePath(dataDir string) string { return filepath.Join(dataDir, WriteProbe) }

// LossesPath is dataDir/losses.jsonl.
func LossesPath(dataDir string) string { return filepath.Join(dataDir, Losses) }

// Pointer is dataDir/feeds/<feed>.ptr.
func Pointer(dataDir, feed string) string { return filepath.Join(dataDir, Feeds, feed+".ptr") }

// GlobPointers is dataDir/feeds/<feed>/, a glob feed's pointer directory.
func GlobPointers(dataDir, feed string) string { return filepath.Join(dataDir, Feeds, feed) }

// Epochs is dataDir/feeds/<feed>.epochs.
func Epochs(dataDir, feed string) string { return filepath.Join(dataDir, Feeds, feed+".epochs") }

// DeadLetters is dataDir/dlq/<processor>.jsonl.
func DeadLetters(dataDir, processor string) string {
	return filepath.Join(dataDir, DLQ, processor+".jsonl")
}

// Record is dataDir/state/<processor>.rec: an exactlyOnce file sink's or
// a webhook's record.
func Record(dataDir, processor string) string {
	return filepath.Join(dataDir, State, processor+".rec")
}

// CountState is dataDir/state/count/<processor>.json: a count processor's
// state. Not state/<processor>.json, as an earlier tailfeed kept it: a
// processor named removed or released took the daemon's own removed.json
// or released.json. In a directory of their own the names of count
// states meet no other file, old or new; CountStateOld is the earlier
// name, which a count processor's first open moves to this one.
func CountState(dataDir, processor string) string {
	return filepath.Join(dataDir, State, CountDir, processor+".json")
}

// CountDir is the directory of the count states under dataDir/state.
const CountDir = "count"

// Target is dataDir/state/targets/<processor>.target: a hash of the
// target (type and sink target) the processor's durable state belongs to,
// so that a start finds a target changed while tailfeed was stopped.
func Target(dataDir, processor string) string {
	return filepath.Join(dataDir, State, TargetDir, processor+".target")
}

// TargetDir is the directory of the target stamps under dataDir/state.
const TargetDir = "targets"

// CountStateOld is where a count processor's state was kept before
// CountState (none for the names the daemon's own files have).
func CountStateOld(dataDir, processor string) string {
	if processor == "removed" || processor == "released" {
		return ""
	}
	return filepath.Join(dataDir, State, processor+".json")
}

// Owns reports whether path is dataDir itself or one of the files and
// folders tailfeed keeps there (LOCK, losses.jsonl, feeds/, dlq/, state/
// and what they hold). Paths are compared as given (clean them first).
func Owns(dataDir, path string) bool {
	if path == dataDir || path == LockPath(dataDir) || path == LossesPath(dataDir) {
		return true
	}
	for _, sub := range Dirs {
		dir := filepath.Join(dataDir, sub)
		if path == dir || strings.HasPrefix(path, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// RemovedHolds is dataDir/state/removed.json: what removed subscribers
// still hold, until released (DESIGN §12 "Reload").
func RemovedHolds(dataDir string) string { return filepath.Join(dataDir, State, "removed.json") }

// StateAside is dataDir/state/<processor>.<time>.old: where a reload moves
// a processor's durable state when its target changed.
func StateAside(dataDir, processor, time string) string {
	return filepath.Join(dataDir, State, processor+"."+time+".old")
}

// PointerAside is dataDir/feeds/<feed>.ptr.<epoch>.old: where a reload
// moves a feed's pointer when its path changed.
func PointerAside(dataDir, feed, epoch string) string {
	return filepath.Join(dataDir, Feeds, feed+".ptr."+epoch+".old")
}
