package config_test

import (
	"strings"
	"testing"

	"tailfeed/config"
)

// TestEnvUnsetInBlockScalarAtItsLine: an unset variable inside a literal
// block (|) is reported at the line it is on (DESIGN §12 "at its line"); a
// folded block (>) folds its line breaks away, so it is reported at the
// value's first line.
func TestEnvUnsetInBlockScalarAtItsLine(t *testing.T) {
	for _, c := range []struct{ style, want string }{{"|-", "c.yaml:8:"}, {">-", "c.yaml:6:"}} {
		_, err := config.Parse([]byte(lines(
			"feeds: [{name: app, path: /var/log/app.log}]",
			"processors:",
			"  - name: d",
			"    feed: app",
			"    type: discard",
			"    match: "+c.style,
			"      error",
			"      ${TF_SURELY_UNSET_M}",
		)), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v; want it at %s", c.style, err, c.want)
		}
	}
}
