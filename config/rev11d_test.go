package config_test

// Findings of the eleventh session's review 11d (DESIGN and the diff
// only), fixed the same session: each test failed on the reviewed commit
// (the glob-name check); its comment gives what was observed then.

import (
	"testing"

	"tailfeed/config"
)

// TestRev11DAGlobXPtrBesideUncommittedXRefused
// DESIGN §3/§10: feeds/<feed>.ptr and feeds/<feed>.epochs are a COMMITTED
// feed's files (internal/daemon: pointer.Open and EpochsPath only when the
// strategy is COMMITTED; a glob feed's feeds/<feed>/ likewise). §12
// "Validation" refuses a glob feed named as another feed's file because its
// pointers' directory would be that file. Scenario: single-file feed "x"
// with readStrategy EARLIEST (no pointer, no epochs file) and glob feed
// "x.ptr" with readStrategy LATEST (no pointer directory at all): no file is
// shared, and a reload that made x COMMITTED would be validated (refused)
// then; a pointer left by an earlier COMMITTED run is caught by NewGlob's
// new check, naming the file. Expected: parse OK. Observed: refused
// ("keeps its pointers in dataDir/feeds/x.ptr/, which is feed "x"'s
// pointer file"). stateNames ignores readStrategy (pre-existing in the
// ".ptr"/".epochs" check; the commit kept it, and its new moved-aside
// check refuses an uncommitted glob feed as well). Low severity.
func TestRev11DAGlobXPtrBesideUncommittedXRefused(t *testing.T) {
	src := lines(
		"feeds:",
		"  - name: x",
		"    path: /var/log/x.log",
		"    readStrategy: EARLIEST",
		"  - name: x.ptr",
		"    path: /var/log/app/*.log",
		"    readStrategy: LATEST",
		"processors:",
		"  - {name: a, feed: x, type: discard}",
		"  - {name: b, feed: x.ptr, type: discard}",
	)
	if _, err := config.Parse([]byte(src), "/etc/tailfeed/t.yaml"); err != nil {
		t.Errorf("glob feed x.ptr (LATEST: no pointer directory) beside single-file x (EARLIEST: no pointer) refused: %v", err)
	}
}
