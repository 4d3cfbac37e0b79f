package file

import "testing"

// copyNamedStrict takes only the names logrotate gives a file's copies by
// default (adoptCopies at offset 0: reviews 29c, 29d).
func TestCopyNamedStrict(t *testing.T) {
	for _, c := range []struct {
		name, base string
		want       bool
	}{
		{"app.log.1", "app.log", true},
		{"app.log.1.gz", "app.log", true},
		{"app.log-20261206", "app.log", true},
		{"app-20261206.log", "app.log", true},
		{"app.1.log", "app.log", true},
		{"app-api-20261206.log", "app.log", false},
		{"app-api.log", "app.log", false},
		{"b.log", "app.log", false},
		{"app.log", "app.log", false},
		{"app.logx", "app.log", false},
		{"other.log.1", "app.log", false},
	} {
		if got := copyNamedStrict(c.name, c.base); got != c.want {
			t.Errorf("copyNamedStrict(%q, %q) = %v, want %v", c.name, c.base, got, c.want)
		}
	}
}
