package daemon

import (
	"fmt"

	"tailfeed/config"
	"tailfeed/sink"
)

// logStart names, at start, each feed's input and where it resumes, and
// each processor's target (DESIGN §12 "People"): what an operator checks
// first when lines do not arrive.
func (d *Daemon) logStart() {
	for _, f := range d.feeds {
		fc := f.cfg
		args := []any{"input", fc.Path, "readStrategy", fc.ReadStrategy}
		switch {
		case f.glob != nil:
			// One stream per file, each resuming on its own (DESIGN §10):
			// the glob's start-up line counts them, debug names each.
			args = append(args, "resume", globResume(fc.ReadStrategy))
		case f.ptr != nil && f.ptr.Fresh():
			args = append(args, "resume", "no pointer yet ("+f.ptr.FreshReason()+"): from the start of the file", "pointer", f.ptr.Path())
		case f.ptr != nil:
			r := f.ptr.Record()
			args = append(args, "resume", "the pointer's commit", "offset", r.Offset, "epoch", fmt.Sprintf("%016x", r.Epoch), "pointer", f.ptr.Path())
		case fc.ReadStrategy == config.StrategyLatest || fc.ReadStrategy == config.StrategyOnceLatest:
			args = append(args, "resume", "none (no pointer): from the end of the file")
		default:
			args = append(args, "resume", "none (no pointer): from the start of the file")
		}
		f.log.Info("feed", args...)
		for _, pc := range d.cfg.Processors {
			if pc.Feed == fc.Name {
				f.log.Info("processor", append([]any{"processor", pc.Name, "type", pc.Type}, target(pc)...)...)
			}
		}
	}
}

// globResume is where a glob feed's files resume, by read strategy.
func globResume(strategy string) string {
	switch strategy {
	case config.StrategyLatest:
		return "per file: a file present at start from its end, a new one from its start"
	case config.StrategyOnceLatest:
		return "none: nothing is read"
	case config.StrategyOnceEarliest:
		return "per file: each file matched at start from its start to its size"
	case config.StrategyEarliest:
		return "per file: from the start of each file"
	}
	return "per file: each file from its pointer's commit, a file without one from its start"
}

// target is what a processor writes to or serves, as log key-values
// (its sink type's Describe: secrets redacted, a URL's password, never a
// header).
func target(pc *config.Processor) []any {
	if t, ok := sink.Lookup(pc.Type); ok && t.Describe != nil {
		return t.Describe(pc)
	}
	return nil
}
