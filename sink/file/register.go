package file

import (
	"cmp"
	"os"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/sink"
)

func init() {
	sink.Register("file", sink.Type{New: open,
		// Every key of the file sink is common (path, exactlyOnce, fsync,
		// fsyncIntervalMillis, mode, format: see config's package doc).
		Config: config.SinkSpec{Decode: decode, Formats: true, Output: true},
		Describe: func(pc *config.Processor) []any {
			return []any{"target", pc.Path, "format", cmp.Or(pc.Format, config.FormatRaw), "fsync", pc.Fsync, "exactlyOnce", pc.ExactlyOnce}
		},
		Target: func(pc *config.Processor) string { return pc.Path }})
}

// decode checks what a file processor needs: path.
func decode(s *config.Section, p *config.Processor, own bool) any {
	if own && s.KeyLine("path") == 0 {
		s.Errorf(p.Line, "%s: a file processor needs path (the output file)", s.Path())
	}
	return nil
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
		EpochsFile: datadir.Epochs(env.DataDir, env.Feed.Name),
		Logger:     env.Logger,
		JSON:       pc.Format == config.FormatJSON,
	})
}
