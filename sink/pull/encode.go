package pull

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The wire codec of the pull API, without reflection (issue 14: a batch of
// 10,000 events through encoding/json cost more than everything else).
//
// appendEvent writes exactly the bytes encoding/json's Encoder (the
// default, HTML-escaping one that status.WriteJSON uses) writes for an
// Event: the same field order, the same escapes (\" \\ \b \f \n \r \t,
// \u00XX for the other control bytes and for < > &, \u2028 and \u2029,
// one \ufffd per byte of invalid UTF-8 in the line). encode_test.go holds
// it to that byte for byte, also under fuzzing.
//
// parseSettle reads the ordinary ACK/NACK bodies; anything else (escapes,
// other keys, other case, null, non-ASCII ids) is left to encoding/json,
// so every answer to an unusual body stays what it was.

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as encoding/json encodes a string with HTML
// escaping on (see encoding/json.appendString).
func appendJSONString[S []byte | string](dst []byte, s S) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look (most log text).
		for i+8 <= len(s) && htmlSafe8(uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
			uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		if b := s[i]; b < utf8.RuneSelf {
			if htmlSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other control bytes, < > &
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		n := min(len(s)-i, utf8.UTFMax)
		c, size := utf8.DecodeRuneInString(string(s[i : i+n]))
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const ones, highs = 0x0101010101010101, 0x8080808080808080

// htmlSafe8 reports whether all eight bytes of x are htmlSafe (ASCII, not
// a control byte, not " \\ < > &). It may say no for a safe byte above an
// unsafe one, never yes for an unsafe one.
func htmlSafe8(x uint64) bool {
	bad := (x - 0x20*ones) | x // < 0x20 (a borrow), ≥ 0x80
	bad |= zeroByte(x ^ ('"' * ones))
	bad |= zeroByte(x ^ ('\\' * ones))
	bad |= zeroByte(x ^ ('&' * ones))
	bad |= zeroByte((x | 0x02*ones) ^ ('>' * ones)) // < (0x3c) and > (0x3e)
	return bad&highs == 0
}

// zeroByte sets the high bit of (at least) the lowest zero byte of y.
func zeroByte(y uint64) uint64 { return (y - ones) &^ y }

// htmlSafe: the ASCII bytes encoding/json writes as they are with HTML
// escaping on (encoding/json.htmlSafeSet: 0x20–0x7f but " \ < > &).
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// deliveryKey is the random part of a deliveryId (the map key: no string
// per delivery).
type deliveryKey [16]byte

// appendID appends the deliveryId `<subscriber>:<32 hex digits>`.
func appendID(dst []byte, name string, k *deliveryKey) []byte {
	dst = append(dst, name...)
	dst = append(dst, ':')
	return hex.AppendEncode(dst, k[:])
}

// parseKey returns the key of id when id is `<name>:<32 lowercase hex
// digits>` (the only form newID makes; anything else is unknown).
func parseKey[S []byte | string](name string, id S) (deliveryKey, bool) {
	var k deliveryKey
	if len(id) != len(name)+1+32 || string(id[:len(name)]) != name || id[len(name)] != ':' {
		return k, false
	}
	h := id[len(name)+1:]
	_ = h[31]
	for i := range k {
		hi, lo := unhex[h[2*i]], unhex[h[2*i+1]]
		if hi|lo > 15 {
			return k, false
		}
		k[i] = hi<<4 | lo
	}
	return k, true
}

// unhex maps a lowercase hex digit to its value, any other byte to 255.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 255
	}
	for i := range 16 {
		t[hexDigits[i]] = byte(i)
	}
	return t
}()

// eventEncoder appends events. The bytes between the per-event values
// are prebuilt: the id's prefix once, and per source (a batch's events
// share it) the feed, epoch and path parts.
type eventEncoder struct {
	prefix []byte // {"deliveryId":"<name>:
	src    *lineSource
	mid    []byte // ","feed":<feed>,"epoch":"<epoch>","position":
	tail   []byte // ,"path":<path>,"line":
}

func newEventEncoder(name string) eventEncoder {
	// Names are [A-Za-z0-9._-]+: nothing to escape.
	return eventEncoder{prefix: append(append([]byte(`{"deliveryId":"`), name...), ':')}
}

// appendEvent appends h's event as encoding/json encodes an Event.
func (c *eventEncoder) appendEvent(dst []byte, h *handed, raw bool) []byte {
	e := h.e // line, epoch, position… never change once taken in
	if c.src != e.src {
		c.src = e.src
		c.mid = appendJSONString(append(c.mid[:0], `","feed":`...), e.src.feed)
		c.mid = append(c.mid, `,"epoch":"`...)
		n := len(c.mid)
		c.mid = append(c.mid, "0000000000000000"...)
		for i, v := 15, e.src.epoch; i >= 0; i, v = i-1, v>>4 {
			c.mid[n+i] = hexDigits[v&0xF]
		}
		c.mid = append(c.mid, `","position":`...)
		c.tail = appendJSONString(append(c.tail[:0], `,"path":`...), e.src.path)
		c.tail = append(c.tail, `,"line":`...)
	}
	// Room for everything but escapes: the appends below do not grow dst.
	dst = slices.Grow(dst, len(c.prefix)+len(c.mid)+len(c.tail)+len(e.line)+112)
	dst = append(dst, c.prefix...)
	n := len(dst)
	dst = dst[:n+32]
	hex.Encode(dst[n:], h.key[:])
	dst = append(dst, c.mid...)
	dst = strconv.AppendInt(dst, e.pos, 10)
	dst = append(dst, `,"sequence":`...)
	dst = strconv.AppendUint(dst, e.seq, 10)
	dst = append(dst, `,"attempt":`...)
	dst = strconv.AppendInt(dst, int64(h.attempt), 10)
	dst = append(dst, c.tail...)
	dst = appendJSONString(dst, e.line)
	if raw {
		dst = append(dst, `,"lineBase64":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, e.line)
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

// settleRequest is a parsed ACK/NACK body.
type settleRequest struct {
	one     []byte   // deliveryId
	hasOne  bool     // deliveryId given
	list    [][]byte // deliveryIds
	hasList bool     // deliveryIds given (a list, maybe empty)
}

// parseSettle parses body when it is one of the two ordinary forms,
// {"deliveryId":"…"} or {"deliveryIds":["…",…]}, with JSON whitespace
// anywhere, and every string printable ASCII without a backslash (then its
// bytes are its value). ids is reused for the list; the ids are views into
// body. ok is false for any other body: encoding/json decides it.
func parseSettle(body []byte, ids [][]byte) (r settleRequest, ok bool) {
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return r, false
	}
	i = skipWS(body, i+1)
	key, i, ok := plainString(body, i)
	if !ok {
		return r, false
	}
	i = skipWS(body, i)
	if i >= len(body) || body[i] != ':' {
		return r, false
	}
	i = skipWS(body, i+1)
	switch string(key) {
	case "deliveryId":
		r.one, i, ok = plainString(body, i)
		if !ok {
			return r, false
		}
		r.hasOne = true
	case "deliveryIds":
		if i >= len(body) || body[i] != '[' {
			return r, false
		}
		i = skipWS(body, i+1)
		r.list, r.hasList = ids[:0], true
		if i < len(body) && body[i] == ']' {
			i++
			break
		}
		for {
			var id []byte
			id, i, ok = plainString(body, i)
			if !ok {
				return r, false
			}
			r.list = append(r.list, id)
			i = skipWS(body, i)
			if i >= len(body) {
				return r, false
			}
			if body[i] == ']' {
				i++
				break
			}
			if body[i] != ',' {
				return r, false
			}
			i = skipWS(body, i+1)
		}
	default:
		return r, false
	}
	i = skipWS(body, i)
	if i >= len(body) || body[i] != '}' {
		return r, false
	}
	return r, skipWS(body, i+1) == len(body)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a JSON string at b[i] made of printable ASCII without
// a backslash and returns its bytes and the index after it.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	n := bytes.IndexByte(b[i+1:], '"')
	if n < 0 {
		return nil, i, false
	}
	s := b[i+1 : i+1+n : i+1+n]
	if !printableASCII(s) {
		return nil, i, false
	}
	return s, i + 2 + n, true
}

// printableASCII reports whether every byte of s is 0x20–0x7e but '\\',
// eight bytes at a time.
func printableASCII(s []byte) bool {
	for len(s) >= 8 {
		x := binary.LittleEndian.Uint64(s)
		// A byte < 0x20, ≥ 0x7f (x+0x01… carries it to ≥ 0x80) or '\\'
		// (zero after the XOR) sets its high bit in bad.
		bad := (x - 0x20*ones) | (x + 0x01*ones) | x
		y := x ^ ('\\' * ones)
		bad |= (y - ones) &^ y
		if bad&highs != 0 {
			return false
		}
		s = s[8:]
	}
	for _, c := range s {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	return true
}
