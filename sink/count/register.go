package count

import (
	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/sink"
)

func init() {
	sink.Register("count", sink.Type{New: open, OwnMatch: true, Describe: func(pc *config.Processor) []any {
		return []any{"target", "counts, at GET /v1/state/" + pc.Name, "exactlyOnce", pc.ExactlyOnce}
	}})
}

// open builds a count processor; its state is dataDir/state/<processor>.json,
// saved at most fsyncIntervalMillis after a change. It applies match
// itself (the group does not filter a count processor by it).
func open(env sink.Env) (any, error) {
	pc := env.Config
	return OpenCount(CountConfig{
		Name:       pc.Name,
		Path:       datadir.CountState(env.DataDir, pc.Name),
		Match:      pc.Built.Match,
		Interval:   pc.Built.FsyncInterval,
		Checkpoint: env.Group,
		Glob:       map[string]bool{env.Feed.Name: config.IsGlob(env.Feed.Path)},
	})
}
