package count

// From sink/file's exactlyonce_test.go.

// eoCheckpoint is a Checkpoint for sinks tested without a group.
type eoCheckpoint struct {
	held    bool
	mark    uint64
	durable uint64
}

func (c *eoCheckpoint) Hold()        { c.held = true }
func (c *eoCheckpoint) Mark() uint64 { return c.mark }
func (c *eoCheckpoint) DurableThrough(m uint64) {
	if m > c.durable {
		c.durable = m
	}
}
