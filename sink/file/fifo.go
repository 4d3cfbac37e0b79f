package file

import (
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"

	"tailfeed/internal/fileutil"
	"tailfeed/processor"
)

// fifoOutput is the output of a sink whose path is a FIFO (with a reader
// at the open or not: fileutil.ErrNoReader).
// "No reader yet" is not an error of the config: a consumer starts after
// the daemon, or restarts while a reload rebuilds the feed, and a start,
// a reload or its rollback must not fail (nor drop the feed) for it. The
// FIFO is opened at the first write instead, and again at every write
// while it still has no reader: the write fails with an error naming the
// FIFO, so the subscriber is fenced, retrying under its policy, and holds
// the pointer before the batch (nothing is written, so nothing is
// committed past it or lost; a stop stays bounded, the backoff ends with
// its context). It is never opened read-write: lines would sit in a pipe
// nobody reads, counted as written, and be lost at exit.
type fifoOutput struct {
	path string
	mode os.FileMode
	log  hclog.Logger
	f    SinkFile // nil until an open found a reader
}

// open opens the FIFO if it is not open yet.
func (o *fifoOutput) open() error {
	if o.f != nil {
		return nil
	}
	f, _, err := openOutput(o.path, o.mode, o.log)
	if err != nil {
		return noReaderError{err} // "open PATH: a FIFO that no process reads …"
	}
	o.f = f
	if o.log != nil {
		o.log.Info("the output FIFO has a reader now; writing to it", "path", o.path)
	}
	return nil
}

// Write writes p to the FIFO, opening it first if it is not open. A failed
// write (EPIPE: the reader went away, a consumer restarting) closes the
// descriptor: with no reader and no writer left the pipe is gone, so a
// part of p it held is never read by the next reader as the start of a
// line; the next write opens the FIFO again (no reader yet: the same held
// error). The error is the output's, like no reader at all: held, never
// dead-lettered.
func (o *fifoOutput) Write(p []byte) (int, error) {
	if err := o.open(); err != nil {
		return 0, err
	}
	n, err := o.f.Write(p)
	if err != nil {
		o.f.Close()
		o.f = nil
		return n, noReaderError{fmt.Errorf("write %s: %w (the FIFO's reader went away; retrying until a reader opens it)", o.path, err)}
	}
	return n, nil
}

// Truncate and Sync have nothing to do on a FIFO: a pipe cannot be cut
// back (a failed write closes it instead, above) and holds nothing to
// make durable (fsync on a pipe is EINVAL; `fsync: always` on a FIFO
// output writes to the pipe, no more).
func (o *fifoOutput) Truncate(size int64) error { return nil }

func (o *fifoOutput) Sync() error { return nil }

func (o *fifoOutput) Close() error {
	if o.f == nil {
		return nil
	}
	return o.f.Close()
}

// noReaderError is a failed open of the output FIFO. It is the output's
// fault, not a line's: like processor.ErrFatal (errors.Is), the line is
// held and retried at the cap, never dead-lettered (under onFailure
// deadLetter every line would go to the ledger while the reader is away).
type noReaderError struct{ err error }

func (e noReaderError) Error() string        { return e.err.Error() }
func (e noReaderError) Unwrap() error        { return e.err }
func (e noReaderError) Is(target error) bool { return target == processor.ErrFatal }

// isNoReader reports whether err is the open of a FIFO with no reader.
func isNoReader(err error) bool { return errors.Is(err, fileutil.ErrNoReader) }
