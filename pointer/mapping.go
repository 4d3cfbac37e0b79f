package pointer

import (
	"os"

	"github.com/edsrzf/mmap-go"
)

// Mapping is the writable view of the pointer file's Size bytes. It is the
// seam where tests inject faults; Open uses an mmap of the file by default.
type Mapping interface {
	// Bytes returns the mapped bytes, at least Size of them.
	Bytes() []byte
	// Flush writes the bytes to disk and waits: msync(MS_SYNC).
	Flush() error
	// Close unmaps. It does not flush.
	Close() error
}

// mmapMapping is the default Mapping: a shared read-write mmap.
type mmapMapping struct{ m mmap.MMap }

// mapFile maps the first Size bytes of f read-write and shared.
func mapFile(f *os.File) (Mapping, error) {
	m, err := mmap.MapRegion(f, Size, mmap.RDWR, 0, 0)
	if err != nil {
		return nil, err
	}
	return &mmapMapping{m: m}, nil
}

func (m *mmapMapping) Bytes() []byte { return m.m }
func (m *mmapMapping) Flush() error  { return m.m.Flush() }
func (m *mmapMapping) Close() error  { return m.m.Unmap() }
