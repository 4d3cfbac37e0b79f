package pointer

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Inspect reads the pointer file at path without taking its lock and
// decodes it (for `tailfeed pointer show`). It sees what a running daemon
// last stored, synced or not.
func Inspect(path string) (Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return Record{}, err
	}
	defer f.Close()
	buf := make([]byte, Size)
	n, err := io.ReadFull(f, buf)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return Record{}, fmt.Errorf("%s: %w: %d bytes", path, ErrShort, n)
	}
	if err != nil {
		return Record{}, err
	}
	r, err := Decode(buf)
	if err != nil {
		return Record{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}
