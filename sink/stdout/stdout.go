// Package stdout is the `stdout` sink (DESIGN §12 "People"), for trying
// things: it writes each line and '\n' to standard output, one write per
// batch, and a line counts as processed once written. `format: json`
// writes internal/ndjson's object per line instead (the webhook's).
//
// A failed write is retried with the processor's backoff like any sink
// error; a short write is not taken back (standard output cannot be
// truncated), so the lines after a failure may appear twice. Writing to a
// pipe whose reader is gone ends the daemon by SIGPIPE, as it does any
// program writing to standard output: without a final commit, so the
// next run reads again from the last commit (nothing lost). A reader that
// stays but stops reading blocks the write; a stop still ends the call
// within its bound (see Sink). The daemon's own log goes to standard error.
package stdout

import (
	"cmp"
	"context"
	"io"
	"os"

	"tailfeed/config"
	"tailfeed/feed"
	"tailfeed/internal/ndjson"
	"tailfeed/sink"
)

func init() {
	sink.Register("stdout", sink.Type{New: func(env sink.Env) (any, error) {
		return New(os.Stdout, env.Config.Format == config.FormatJSON), nil
	}, Config: config.SinkSpec{Formats: true}, Describe: func(pc *config.Processor) []any {
		return []any{"target", "standard output", "format", cmp.Or(pc.Format, config.FormatRaw)}
	}})
}

// Sink writes a batch's lines to w with one Write.
//
// The Write runs on a writer goroutine of the sink's own and ProcessBatch
// waits for it or for its context, whichever ends first: a stop bounds
// the wait (DESIGN §5, §12 "Signals": within shutdownTimeoutMillis) even
// when the write never returns (`tailfeed run | consumer` whose consumer
// stopped reading: the pipe is full). A write of standard output cannot be
// interrupted (the descriptor is usually blocking, and making it
// non-blocking would change it for every process sharing it), so a write
// given up that way stays on its goroutine, which ends when the write
// does; its lines count as not done (the final commit stops before them:
// they are read again, or given to a reload's new instance, so a stuck
// write that completes after all leaves them twice, never a gap), and its
// buffer is kept out of the batch pool so that what it writes late is
// still those lines. The hand-off is per batch, not per line (some
// hundred nanoseconds); a standard output redirected to a regular file,
// whose writes do not wait for a reader, is written inline without it.
type Sink struct {
	w      io.Writer
	out    ndjson.Renderer // raw lines, or one object per line
	inline bool            // w is a regular file: written on the caller's goroutine

	reqs    chan []byte // to the writer goroutine; nil until the first write (and after Close)
	res     chan error  // its answer to each request (room for one: a given-up write never blocks it)
	pending bool        // a request whose answer was not taken: its call was stopped
}

// New returns a sink writing to w, raw lines or (asJSON) one NDJSON object
// per line.
func New(w io.Writer, asJSON bool) *Sink {
	s := &Sink{w: w, out: ndjson.Renderer{JSON: asJSON}}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			s.inline = true
		}
	}
	return s
}

// ProcessBatch implements processor.BatchProcessor. It returns (0,
// ctx.Err()) when ctx ends before the write did.
func (s *Sink) ProcessBatch(ctx context.Context, b *feed.Batch) (int, error) {
	if len(b.Lines) == 0 {
		return 0, nil
	}
	if s.inline {
		if _, err := s.w.Write(s.out.Render(b)); err != nil {
			return 0, err
		}
		return len(b.Lines), nil
	}
	if s.pending {
		// The write a stopped call gave up: the renderer's buffer is its
		// until it returns, and its lines were reported not done.
		select {
		case <-s.res:
			s.pending = false
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if s.reqs == nil {
		s.reqs, s.res = make(chan []byte), make(chan error, 1)
		go write(s.w, s.reqs, s.res)
	}
	s.reqs <- s.out.Render(b) // the writer is idle: nothing is pending
	var err error
	select {
	case err = <-s.res:
	case <-ctx.Done():
		select {
		case err = <-s.res: // written meanwhile after all
		default:
			s.pending = true
			b.Keep() // the write may still read the batch's buffer
			return 0, ctx.Err()
		}
	}
	if err != nil {
		return 0, err
	}
	return len(b.Lines), nil
}

// Close implements processor.Closer: the writer goroutine ends (after the
// write in progress, if one was given up). Not concurrent with
// ProcessBatch.
func (s *Sink) Close() error {
	if s.reqs != nil {
		close(s.reqs)
		s.reqs = nil
	}
	return nil
}

// write writes each request to w and answers its error on res.
func write(w io.Writer, reqs <-chan []byte, res chan<- error) {
	for p := range reqs {
		_, err := w.Write(p)
		res <- err
	}
}
