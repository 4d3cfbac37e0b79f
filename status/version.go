package status

import (
	"encoding/json"
	"hash/fnv"
	"sync"
)

// Versioner stamps reports with a version that increases whenever any other
// field changes.
type Versioner struct {
	mu      sync.Mutex
	version uint64
	last    uint64
}

// NewVersioner starts at version 1.
func NewVersioner() *Versioner { return &Versioner{version: 1} }

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
