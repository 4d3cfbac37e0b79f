// Package ndjson is the one JSON object per line that the webhook sink
// POSTs and `format: json` writes in the file and stdout sinks (DESIGN §6,
// §12 "People"):
//
//	{"id":"<feed>:<epoch>:<position>","feed":…,"epoch":"<16 hex>","position":…,"path":…,"line":"…"}
//
// position is the byte offset just after the line's terminator in its
// file (the line's identity with epoch); line is text, one U+FFFD per
// invalid UTF-8 byte; lineBase64 (the raw bytes) is added on request.
// Sinks share it from here so that no sink imports another.
package ndjson

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"strconv"

	"tailfeed/feed"
)

// Object is one line's object.
type Object struct {
	ID         string  `json:"id"`
	Feed       string  `json:"feed"`
	Epoch      string  `json:"epoch"`
	Position   int64   `json:"position"`
	Path       string  `json:"path"`
	Line       string  `json:"line"`
	LineBase64 *string `json:"lineBase64,omitempty"`
}

// Fill sets o to describe line, which ends at byte end of epoch's file;
// raw adds lineBase64.
func (o *Object) Fill(feed, path string, epoch uint64, end int64, line []byte, raw bool) {
	e := EpochHex(epoch)
	*o = Object{ID: feed + ":" + e + ":" + strconv.FormatInt(end, 10), Feed: feed, Epoch: e,
		Position: end, Path: path, Line: string(line)}
	if raw {
		s := base64.StdEncoding.EncodeToString(line)
		o.LineBase64 = &s
	}
}

// EpochHex is an epoch as the objects show it: 16 hex digits.
func EpochHex(epoch uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[epoch&15]
		epoch >>= 4
	}
	return string(b[:])
}

// NewEncoder returns the encoder the objects are written with: one object
// and '\n' per Encode, HTML characters not escaped.
func NewEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// BatchEncoder encodes whole batches: one object per line.
type BatchEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
	obj Object
}

// Encode returns b's lines as objects, each followed by '\n'. The slice is
// valid until the next Encode.
func (e *BatchEncoder) Encode(b *feed.Batch) []byte {
	if e.enc == nil {
		e.enc = NewEncoder(&e.buf)
	}
	e.buf.Reset()
	for i, l := range b.Lines {
		e.obj.Fill(b.Feed, b.Path, b.Epoch, b.Ends[i], l, false)
		e.enc.Encode(&e.obj) // cannot fail: strings and numbers only
	}
	return e.buf.Bytes()
}

// Renderer renders whole batches for the sinks that write lines out
// (file, stdout): raw (each line and '\n') or, with JSON set, one object per
// line. Its zero value renders raw.
type Renderer struct {
	JSON bool
	enc  BatchEncoder
	buf  []byte
}

// Render returns what one batch writes: the batch's own buffer when it
// shows every line raw (no copy; read-only, valid while the batch is), a
// copy in the renderer's buffer otherwise, or the lines' objects. The slice
// is valid until the next Render.
func (r *Renderer) Render(b *feed.Batch) []byte {
	if r.JSON {
		return r.enc.Encode(b)
	}
	if p, ok := b.Joined(); ok {
		return p
	}
	r.buf = r.buf[:0]
	for _, l := range b.Lines {
		r.buf = append(r.buf, l...)
		r.buf = append(r.buf, '\n')
	}
	return r.buf
}
