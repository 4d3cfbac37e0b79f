package daemon

// The sink types a config may name: each package registers itself with
// tailfeed/sink (its constructor and any HTTP routes). A new sink is one
// more line here.
import (
	_ "tailfeed/sink/count"
	_ "tailfeed/sink/discard"
	_ "tailfeed/sink/file"
	_ "tailfeed/sink/kafka"
	_ "tailfeed/sink/nats"
	_ "tailfeed/sink/postgres"
	_ "tailfeed/sink/pull"
	_ "tailfeed/sink/stdout"
	_ "tailfeed/sink/webhook"
)

// sinkOf is the sink of the processor called name (nil: none), for the
// routes a sink type serves.
func (d *Daemon) sinkOf(name string) any {
	for _, f := range d.feedList() {
		for _, g := range f.groups {
			if g.Name() == name {
				return g.Sink()
			}
		}
	}
	return nil
}
