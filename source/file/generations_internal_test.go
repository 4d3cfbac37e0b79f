package file

import (
	"slices"
	"testing"
)

// The default rotatedNames: the base name, '.' or '-', digits, a date, or
// both, optionally ".gz"; configured globs replace it.
func TestRotatedNameDefault(t *testing.T) {
	t.Parallel()
	s := New(Config{Path: "/var/log/app.log"}, nil)
	for name, want := range map[string]bool{
		"app.log.1": true, "app.log.12.gz": true, "app.log-20261201": true, "app.log-20261201.gz": true,
		"app.log-2026-12-01": true, "app.log-2026-12-01.3.gz": true, "app.log-20261201-1733049600": true,
		"app.log.1-20261201": true,
		"app.log":            false, "app.log.gz": false, "app.log.tmp": false, "app.log.1.bak": false,
		"app.logx.1": false, "app.log..1": false, "app.log.1.gz.tmp": false, "other.log.1": false,
	} {
		if got := s.rotatedName(name, "app.log"); got != want {
			t.Errorf("rotatedName(%q) = %v, want %v", name, got, want)
		}
	}
	s = New(Config{Path: "/var/log/app.log", RotatedNames: []string{"app-*.log", "old.[0-9]"}}, nil)
	for name, want := range map[string]bool{"app-1.log": true, "old.3": true, "app.log.1": false, "app.log": false} {
		if got := s.rotatedName(name, "app.log"); got != want {
			t.Errorf("with globs: rotatedName(%q) = %v, want %v", name, got, want)
		}
	}
}

// Ties of mtime: a higher number first, an earlier date first.
func TestRankOrder(t *testing.T) {
	t.Parallel()
	names := []string{"app.log.1", "app.log.3.gz", "app.log.2", "app.log-2026-12-02", "app.log-20261201"}
	slices.SortStableFunc(names, func(a, b string) int {
		ra, rb := rankOf(a, "app.log"), rankOf(b, "app.log")
		switch {
		case ra.before(rb):
			return -1
		case rb.before(ra):
			return 1
		}
		return 0
	})
	want := []string{"app.log.3.gz", "app.log.2", "app.log.1", "app.log-20261201", "app.log-2026-12-02"}
	if !slices.Equal(names, want) {
		t.Fatalf("order %v, want %v", names, want)
	}
}
