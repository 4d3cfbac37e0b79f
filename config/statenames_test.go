package config_test

import (
	"strings"
	"testing"

	"tailfeed/config"
)

// A glob feed's pointers' directory (dataDir/feeds/<feed>/) must not be
// another feed's pointer file (feeds/<feed>.ptr) or epochs file
// (feeds/<feed>.epochs): the config is refused at the glob feed's name.
// Before, feeds x and x.ptr were accepted and x.ptr never started.
func TestGlobFeedNameOnAnotherFeedsFile(t *testing.T) {
	for _, tc := range []struct{ name, what string }{{"x.ptr", "pointer"}, {"x.epochs", "epochs"}} {
		src := lines(
			"feeds:",
			"  - name: x",
			"    path: /var/log/x.log",
			"  - name: "+tc.name,
			"    path: /var/log/app/*.log",
			"processors:",
			"  - {name: a, feed: x, type: discard}",
			"  - {name: b, feed: "+tc.name+", type: discard}",
		)
		errs := mustFail(t, src)
		if errs[0].Line != 4 || !strings.Contains(errs[0].Msg, `feed "x"'s `+tc.what+" file") {
			t.Errorf("%s: errors %v; want line 4 naming feed x's %s file", tc.name, errs, tc.what)
		}
	}
	// Not a glob: x.ptr's pointer is feeds/x.ptr.ptr, no clash.
	src := lines(
		"feeds:",
		"  - name: x",
		"    path: /var/log/x.log",
		"  - name: x.ptr",
		"    path: /var/log/y.log",
		"processors:",
		"  - {name: a, feed: x, type: discard}",
		"  - {name: b, feed: x.ptr, type: discard}",
	)
	if _, err := config.Parse([]byte(src), "/etc/tailfeed/t.yaml"); err != nil {
		t.Errorf("single-file feeds x and x.ptr refused: %v", err)
	}
}
