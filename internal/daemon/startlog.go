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

// target is what a processor writes to or serves, as log key-values
// (its sink type's Describe: secrets redacted, a URL's password, never a
// header).
func target(pc *config.Processor) []any {
	if t, ok := sink.Lookup(pc.Type); ok && t.Describe != nil {
		return t.Describe(pc)
	}
	return nil
}
