package file

import "time"

// SetStopDrainBound shortens how long a closing glob stream waits for its
// lines' acknowledgements (for Globs made afterwards); the returned func
// restores it.
func SetStopDrainBound(d time.Duration) func() {
	old := stopDrainBound
	stopDrainBound = d
	return func() { stopDrainBound = old }
}
