package feed

// Delivery is one line handed to a Processor. The group reuses one Delivery
// value per line; Line is a view into the batch and is valid only until
// Process returns (copy it to keep it).
type Delivery struct {
	Feed     string
	Path     string
	Sequence uint64 // per run, from 1; never store it
	Epoch    uint64
	Position int64 // byte offset just after the line's terminator
	Attempt  int   // 1 for the first try, per run
	Line     []byte

	positioned  bool
	completions []func() error
}

// Reset prepares d for line i of b (attempt 1, no completions).
func (d *Delivery) Reset(b *Batch, i int) {
	d.Feed, d.Path = b.Feed, b.Path
	d.Sequence = b.FirstSeq + uint64(i)
	d.Epoch = b.Epoch
	d.Position = b.Ends[i]
	d.Line = b.Lines[i]
	d.Attempt = 1
	d.positioned = b.Positioned
	d.completions = d.completions[:0]
}

// Positioned reports whether the line has a position that can be committed
// (false for lines appended to a rotated file after the switch, and replays).
func (d *Delivery) Positioned() bool { return d.positioned }

// AlreadyApplied reports whether a sink that stored (epoch, pos) as its last
// applied line has applied this one already: same epoch and Position <= pos.
// Always false for a delivery without a position.
func (d *Delivery) AlreadyApplied(epoch uint64, pos int64) bool {
	return d.positioned && epoch == d.Epoch && d.Position <= pos
}

// OnComplete registers f to run after the whole delivery was processed and
// before the line counts as dispatched. It returns false (and does not keep
// f) for a delivery without a position.
func (d *Delivery) OnComplete(f func() error) bool {
	if !d.positioned {
		return false
	}
	d.completions = append(d.completions, f)
	return true
}

// Completions returns the registered completions (for the group).
func (d *Delivery) Completions() []func() error { return d.completions }

// ClearCompletions drops the registered completions.
func (d *Delivery) ClearCompletions() { d.completions = d.completions[:0] }
