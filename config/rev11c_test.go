package config_test

// Findings of the eleventh session's review 11c (DESIGN and the diff
// only), fixed the same session: each test failed on the reviewed change
// (the glob-name check); its comment gives what was observed then.

import (
	"testing"

	"tailfeed/config"
)

// TestRev11CAGlobXPtrBesideGlobXRefused
// DESIGN §10: a glob feed keeps only dataDir/feeds/<feed>/<epoch>.ptr and
// feeds/<feed>.epochs; §3's feeds/<feed>.ptr is a single-file feed's
// pointer. So glob feeds "x" and "x.ptr" share no file: feeds/x/,
// feeds/x.epochs vs feeds/x.ptr/, feeds/x.ptr.epochs. stateNames refuses
// the pair anyway (it checks only that a feed "x" exists, not that it is
// single-file): a valid config is rejected.
// Expected: parse OK. Observed: "a glob feed named "x.ptr" keeps its
// pointers in dataDir/feeds/x.ptr/, which is feed "x"'s pointer file".
// Failed 3/3 runs; a regression (stateNames is new).
func TestRev11CAGlobXPtrBesideGlobXRefused(t *testing.T) {
	src := lines(
		"feeds:",
		"  - name: x",
		"    path: /var/log/x/*.log",
		"  - name: x.ptr",
		"    path: /var/log/app/*.log",
		"processors:",
		"  - {name: a, feed: x, type: discard}",
		"  - {name: b, feed: x.ptr, type: discard}",
	)
	if _, err := config.Parse([]byte(src), "/etc/tailfeed/t.yaml"); err != nil {
		t.Errorf("glob feeds x and x.ptr (no shared file) refused: %v", err)
	}
}

// TestRev11CBGlobOnMovedAsidePointerAccepted
// DESIGN §12 "Reload": a single-file feed whose path changes has its
// pointer renamed to feeds/<feed>.ptr.<epoch>.old (datadir.PointerAside;
// and its epochs file to feeds/<feed>.epochs.<epoch>.old). A glob feed
// named "x.ptr.0000000000000001.old" keeps its pointers' directory at that
// very path: the same clash stateNames exists for, but it checks only the
// ".ptr" and ".epochs" suffixes. Expected: refused at the glob feed's
// name. Observed: accepted. Failed 3/3 runs (not covered by the change).
func TestRev11CBGlobOnMovedAsidePointerAccepted(t *testing.T) {
	src := lines(
		"feeds:",
		"  - name: x",
		"    path: /var/log/x.log",
		"  - name: x.ptr.0000000000000001.old",
		"    path: /var/log/app/*.log",
		"processors:",
		"  - {name: a, feed: x, type: discard}",
		"  - {name: b, feed: x.ptr.0000000000000001.old, type: discard}",
	)
	if _, err := config.Parse([]byte(src), "/etc/tailfeed/t.yaml"); err == nil {
		t.Errorf("glob feed x.ptr.0000000000000001.old (its directory is feed x's moved-aside pointer, feeds/x.ptr.<epoch>.old) accepted")
	}
}
