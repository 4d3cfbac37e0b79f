package count

import (
	"path/filepath"
	"regexp"
	"time"

	"tailfeed/sink"
)

func init() {
	sink.Register("count", sink.Type{New: open, OwnMatch: true})
}

// open builds a count processor; its state is dataDir/state/<processor>.json,
// saved at most fsyncIntervalMillis after a change. It applies match
// itself (the group does not filter a count processor by it).
func open(env sink.Env) (any, error) {
	pc := env.Config
	var match *regexp.Regexp
	if pc.Match != "" {
		var err error
		if match, err = regexp.Compile(pc.Match); err != nil {
			return nil, err
		}
	}
	return OpenCount(CountConfig{
		Name:       pc.Name,
		Path:       filepath.Join(env.DataDir, "state", pc.Name+".json"),
		Match:      match,
		Interval:   time.Duration(pc.FsyncIntervalMillis) * time.Millisecond,
		Checkpoint: env.Group,
	})
}
