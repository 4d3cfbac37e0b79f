package file

import (
	"os"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/sink"
)

func init() {
	sink.Register("file", sink.Type{New: open})
}

// open builds a file sink; with exactlyOnce its side record is
// dataDir/state/<processor>.rec.
func open(env sink.Env) (any, error) {
	pc := env.Config
	mode := FsyncNever
	switch pc.Fsync {
	case "always":
		mode = FsyncAlways
	case "interval":
		mode = FsyncInterval
	}
	record := ""
	if pc.ExactlyOnce {
		record = datadir.Record(env.DataDir, pc.Name)
	}
	return Open(Config{
		Path:       pc.Path,
		Mode:       os.FileMode(pc.Mode),
		Fsync:      mode,
		Interval:   pc.Built.FsyncInterval,
		Checkpoint: env.Group,
		SyncLines:  env.Feed.MaxPendingAcks / 2,
		Record:     record,
		PerEpoch:   config.IsGlob(env.Feed.Path),
		Logger:     env.Logger,
		JSON:       pc.Format == config.FormatJSON,
	})
}
