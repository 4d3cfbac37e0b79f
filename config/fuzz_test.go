package config_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"tailfeed/config"
)

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, and must
// return either a config that satisfies the schema's invariants or an
// *Errors whose every entry names the file, sorted by line.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse(data, "/fuzz/tailfeed.yaml")
		if err != nil {
			if cfg != nil {
				t.Fatal("a config along with an error")
			}
			var errs *config.Errors
			if !errors.As(err, &errs) || len(*errs) == 0 {
				t.Fatalf("error %T %q is not a non-empty *Errors", err, err)
			}
			for i, e := range *errs {
				if e.File != "/fuzz/tailfeed.yaml" || e.Line < 0 || e.Msg == "" {
					t.Fatalf("bad entry %#v", e)
				}
				if i > 0 && e.Line < (*errs)[i-1].Line {
					t.Fatalf("not sorted by line:\n%v", err)
				}
			}
			return
		}
		checkInvariants(t, cfg)
	})
}

// checkInvariants asserts what every successfully parsed config guarantees.
func checkInvariants(t *testing.T, cfg *config.Config) {
	t.Helper()
	if !filepath.IsAbs(cfg.DataDir) || len(cfg.Feeds) == 0 {
		t.Fatalf("DataDir %q, %d feeds", cfg.DataDir, len(cfg.Feeds))
	}
	feeds := map[string]*config.Feed{}
	for _, f := range cfg.Feeds {
		if !config.ValidName.MatchString(f.Name) || feeds[f.Name] != nil || !filepath.IsAbs(f.Path) {
			t.Fatalf("bad feed %+v", f)
		}
		if !slices.Contains(config.Strategies, f.ReadStrategy) || !slices.Contains(config.Policies, f.Overload.Policy) ||
			f.MaxLineBytes <= 0 || f.QueueCapacity <= 0 || f.QueueBytes <= 0 || f.MaxPendingAcks <= 0 ||
			f.PollIntervalMillis <= 0 || f.RotateWaitMillis < 0 || f.CommitSyncMillis <= 0 ||
			f.Overload.SpinBoundMillis <= 0 || f.Overload.BlockDeadlineMillis <= 0 {
			t.Fatalf("bad feed values %+v", f)
		}
		feeds[f.Name] = f
	}
	procs := map[string]bool{}
	for _, p := range cfg.Processors {
		f := feeds[p.Feed]
		if !config.ValidName.MatchString(p.Name) || procs[p.Name] || f == nil || !slices.Contains(config.SinkTypes(), p.Type) {
			t.Fatalf("bad processor %+v", p)
		}
		procs[p.Name] = true
		if p.Type == "file" && !filepath.IsAbs(p.Path) || p.Type == "webhook" && config.CheckURL(p.URL) != "" {
			t.Fatalf("bad processor %+v", p)
		}
		r := p.Retry
		if r.InitialMillis <= 0 || r.MaxMillis < r.InitialMillis || !(r.Jitter >= 0 && r.Jitter <= 1) || r.Attempts <= 0 {
			t.Fatalf("bad retry %+v", r)
		}
		if pol := p.Policy(f); !slices.Contains(config.Policies, pol.Policy) || pol.SpinBoundMillis <= 0 || pol.BlockDeadlineMillis <= 0 {
			t.Fatalf("bad policy %+v", pol)
		}
	}
	for _, f := range cfg.Feeds {
		for name := range f.Overload.Subscribers {
			if !procs[name] {
				t.Fatalf("feed %s: override for unknown %q", f.Name, name)
			}
		}
	}
}
