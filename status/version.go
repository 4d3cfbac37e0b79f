package status

import (
	"encoding/json"
	"hash/fnv"
	"sync"
	"time"
)

// Versioner stamps reports with a version that increases whenever any other
// field changes.
type Versioner struct {
	mu      sync.Mutex
	version uint64
	last    uint64
}

// NewVersioner starts at the wall clock in microseconds, so the version a
// launcher saw before a restart is below every version after it (a report
// takes far longer than a microsecond to change, and JSON carries the value
// exactly: it stays below 2^53 until the year 2255).
func NewVersioner() *Versioner { return newVersioner(uint64(time.Now().UnixMicro())) }

func newVersioner(start uint64) *Versioner { return &Versioner{version: max(start, 1)} }

// Stamp sets r.Version.
func (v *Versioner) Stamp(r Report) Report {
	r.Version = 0
	b, _ := json.Marshal(r)
	h := fnv.New64a()
	h.Write(b)
	sum := h.Sum64()
	v.mu.Lock()
	if sum != v.last {
		if v.last != 0 {
			v.version++
		}
		v.last = sum
	}
	r.Version = v.version
	v.mu.Unlock()
	return r
}
