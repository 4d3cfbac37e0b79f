package daemon

import (
	"fmt"

	"tailfeed/config"
	"tailfeed/processor"
)

// Options are seams for in-process tests; `tailfeed run` passes SetLog only.
type Options struct {
	// SetLog, when set, applies a reload's log section (level and format)
	// to the daemon's logger; nil: the logger stays as it was built.
	SetLog func(config.Log)

	// Processors replaces the processor of the subscriber named by a key,
	// whatever type the config gives it (the config must still be valid, so
	// tests name a `discard` processor and swap in their own). Build gets the
	// processor's config and its group (the Checkpoint of a processor that
	// persists asynchronously) and returns a processor.Processor or a
	// processor.BatchProcessor; one that is also a processor.Closer is closed
	// at stop.
	Processors map[string]Build

	// WrapLossFile, when set, wraps every file the losses ledger
	// (dataDir/losses.jsonl) appends to: a test fails or delays its writes
	// and fsyncs.
	WrapLossFile func(LossFile) LossFile
}

// Build makes a test processor; see Options.
type Build func(pc *config.Processor, g *processor.Group) (any, error)

func (d *Daemon) buildCustom(g *processor.Group, pc *config.Processor, build Build) (*processor.Group, processor.Closer, error) {
	p, err := build(pc, g)
	if err != nil {
		return nil, nil, fmt.Errorf("processor %s: %w", pc.Name, err)
	}
	return d.setProcessor(g, pc, p)
}

// setProcessor makes p the group's processor.
func (d *Daemon) setProcessor(g *processor.Group, pc *config.Processor, p any) (*processor.Group, processor.Closer, error) {
	switch v := p.(type) {
	case processor.BatchProcessor:
		g.SetBatchProcessor(v)
	case processor.Processor:
		g.SetProcessor(v)
	default:
		return nil, nil, fmt.Errorf("processor %s: %T is not a processor", pc.Name, p)
	}
	c, _ := p.(processor.Closer)
	return g, c, nil
}
