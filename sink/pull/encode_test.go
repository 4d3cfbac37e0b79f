package pull

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"tailfeed/status"
)

// oddLines are lines whose JSON encoding has every escape encoding/json
// uses, and invalid UTF-8 of every kind.
var oddLines = []string{
	"",
	"plain ascii line",
	`quotes " and backslashes \ and \" together`,
	"<script>alert('&amp;')</script>",
	"controls \x00\x01\x02\x07\b\t\n\v\f\r\x0e\x1b\x1f and DEL \x7f",
	"line separator \u2028 and paragraph separator \u2029 and next line \u0085",
	"valid é ü 日本語 🎉 \uFEFF BOM \U0010FFFF",
	"invalid \xff\xfe bytes",
	"truncated \xc3 two-byte, \xe6\x97 three-byte, \xf0\x9f\x8e four-byte",
	"\xc3",
	"\xe2\x80",         // a truncated U+2028
	"\xe2\x80\xa8\xe2", // U+2028 then a truncated one
	"surrogate \xed\xa0\x80 and \xed\xbf\xbf",
	"overlong \xc0\xaf \xe0\x80\xaf \xf8\x88\x80\x80\x80",
	"beyond U+10FFFF \xf4\x90\x80\x80",
	"continuation bytes alone \x80\xbf",
	"a\xffb\xc3\x28c\x00é",
	strings.Repeat("long line with some payload ", 200),
}

// encodingJSON is the bytes status.WriteJSON writes for v.
func encodingJSON(t testing.TB, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// eventOf is the Event encoding/json used to be given for h.
func eventOf(name string, h *handed, raw bool) Event {
	var id []byte
	id = appendID(id, name, &h.key)
	ev := Event{DeliveryID: string(id), Feed: h.e.src.feed, Epoch: fmt.Sprintf("%016x", h.e.src.epoch), Position: h.e.pos,
		Sequence: h.e.seq, Attempt: h.attempt, Path: h.e.src.path, Line: string(h.e.line)}
	if raw {
		s := base64.StdEncoding.EncodeToString(h.e.line)
		ev.LineBase64 = &s
	}
	return ev
}

// checkEvent holds appendEvent to encoding/json: the same bytes, and the
// same Event when decoded.
func checkEvent(t testing.TB, h *handed, raw bool) {
	t.Helper()
	want := encodingJSON(t, eventOf("consumer", h, raw))
	enc := newEventEncoder("consumer")
	got := append(enc.appendEvent(nil, h, raw), '\n')
	if !bytes.Equal(got, want) {
		t.Fatalf("line %q: the fast encoder wrote\n%s\nencoding/json\n%s", h.e.line, got, want)
	}
	var a, b Event
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("line %q: %s does not decode: %v", h.e.line, got, err)
	}
	json.Unmarshal(want, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("line %q decodes to %+v, want %+v", h.e.line, a, b)
	}
	if raw {
		if back, _ := base64.StdEncoding.DecodeString(*a.LineBase64); !bytes.Equal(back, h.e.line) {
			t.Fatalf("lineBase64 of %q decodes to %q", h.e.line, back)
		}
	}
}

func oddHanded(line []byte) *handed {
	src := &lineSource{feed: "app", path: "/var/log/app.log", epoch: 0x00c3a1d2e4f50617, positioned: true}
	h := &handed{e: &pullEntry{src: src, pos: 1234, seq: 17, line: line}, attempt: 2}
	for i := range h.key {
		h.key[i] = byte(i * 17)
	}
	return h
}

// TestEventEncoderMatchesEncodingJSON: the hand-written encoder writes, for
// odd lines (invalid UTF-8, control bytes, quotes, < > &, U+2028), odd
// feeds and paths and the extreme numbers, the bytes encoding/json wrote
// before it, and they decode to the same events; so does a whole response.
func TestEventEncoderMatchesEncodingJSON(t *testing.T) {
	for _, line := range oddLines {
		for _, raw := range []bool{false, true} {
			checkEvent(t, oddHanded([]byte(line)), raw)
		}
	}
	h := oddHanded([]byte("x"))
	h.e.src.epoch, h.e.pos, h.e.seq, h.attempt = math.MaxUint64, math.MaxInt64, math.MaxUint64, math.MaxInt
	checkEvent(t, h, false)
	h.e.src.epoch, h.e.pos, h.e.seq, h.attempt = 0, 0, 0, 0
	checkEvent(t, h, true)
	for _, odd := range oddLines {
		h.e.src = &lineSource{feed: odd, path: odd}
		checkEvent(t, h, false)
	}

	// A whole response, events sharing and changing feed and path.
	for _, n := range []int{0, 1, 3, 2000} { // 2000 events cross flushAt
		hs := make([]handed, n)
		a := &lineSource{feed: "app", path: "/var/log/app.log", epoch: 7}
		b := &lineSource{feed: "other", path: "/var/log/other <&> \u2028.log", epoch: 1 << 63}
		for i := range hs {
			hs[i] = *oddHanded([]byte(oddLines[i%len(oddLines)]))
			hs[i].e.src = a // runs of events sharing a source, and changes
			if i%3 == 2 || i%100 > 90 {
				hs[i].e.src = b
			}
		}
		for _, raw := range []bool{false, true} {
			evs := make([]Event, n)
			for i := range hs {
				evs[i] = eventOf("consumer", &hs[i], raw)
			}
			want := httptest.NewRecorder()
			status.WriteJSON(want, 200, struct {
				Events []Event `json:"events"`
			}{evs})
			got := httptest.NewRecorder()
			writeEvents(got, "consumer", hs, raw)
			if !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) || got.Code != 200 ||
				got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
				t.Fatalf("%d events, raw %v: the response differs from encoding/json's (%d bytes, want %d)",
					n, raw, got.Body.Len(), want.Body.Len())
			}
		}
	}
}

// FuzzEventEncoder holds the fast encoder to encoding/json on any line,
// feed and path: the same bytes.
func FuzzEventEncoder(f *testing.F) {
	for _, l := range oddLines {
		f.Add([]byte(l), "app", "/var/log/app.log")
	}
	f.Add([]byte("\xe2\x80\xa9\xe2\x80"), "a<b", "/tmp/\x00\xff")
	f.Fuzz(func(t *testing.T, line []byte, feed, path string) {
		h := oddHanded(line)
		h.e.src = &lineSource{feed: feed, path: path, epoch: 0x00c3a1d2e4f50617}
		checkEvent(t, h, false)
		checkEvent(t, h, true)
	})
}

// settleBodies are ACK/NACK bodies: the ordinary ones (parseSettle's) and
// ones only encoding/json reads (escapes, case, null, duplicates, bad).
var settleBodies = []string{
	`{"deliveryId":"consumer:0123456789abcdef0123456789abcdef"}`,
	` { "deliveryId" : "x" } `,
	"\t{\n\"deliveryIds\"\r:\n[ \"a\" ,\"b\",\"consumer:00\" ] }\n",
	`{"deliveryIds":[]}`,
	`{"deliveryIds":[""]}`,
	`{"deliveryId":""}`,
	`{"deliveryId":"a\"b"}`,
	`{"deliveryId":"\u0063onsumer:00"}`,
	`{"deliveryId":"é"}`,
	`{"deliveryId":"a` + "\x7f" + `"}`,
	`{"DeliveryId":"x"}`,
	`{"deliveryids":["x"]}`,
	`{"deliveryIds":null}`,
	`{"deliveryId":null}`,
	`{"deliveryId":"x","deliveryId":"y"}`,
	`{"deliveryId":"x","deliveryIds":["y"]}`,
	`{"deliveryIds":["x"],"deliveryIds":[]}`,
	`{"deliveryIds":["x",]}`,
	`{"deliveryIds":["x" "y"]}`,
	`{"deliveryIds":["x"]`,
	`{"deliveryIds":"x"}`,
	`{"deliveryId":42}`,
	`{"extra":1}`,
	`{}`,
	`[]`,
	`null`,
	`{"deliveryId":"x"} {"deliveryId":"y"}`,
	`{"deliveryId":"x"}garbage`,
	`{"deliveryId":"x"`,
	`{"deliveryId":"x`,
}

// checkParseSettle: when parseSettle reads a body, encoding/json reads it
// the same way (strictly, as status.DecodeJSON does).
func checkParseSettle(t testing.TB, body []byte) {
	t.Helper()
	r, ok := parseSettle(body, nil)
	if !ok {
		return // left to encoding/json
	}
	var sb settleBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(&sb)
	if err == nil {
		if _, terr := dec.Token(); terr == nil {
			err = fmt.Errorf("trailing data")
		}
	}
	if err != nil {
		t.Fatalf("parseSettle read %q, encoding/json refuses it: %v", body, err)
	}
	if r.hasOne != (sb.DeliveryID != nil) || r.hasList != (sb.DeliveryIDs != nil) ||
		(r.hasOne && string(r.one) != *sb.DeliveryID) || len(r.list) != len(sb.DeliveryIDs) {
		t.Fatalf("parseSettle read %q as %+v, encoding/json as %+v", body, r, sb)
	}
	for i, id := range r.list {
		if string(id) != sb.DeliveryIDs[i] {
			t.Fatalf("parseSettle read id %d of %q as %q, encoding/json as %q", i, body, id, sb.DeliveryIDs[i])
		}
	}
}

// TestParseSettleAgreesWithEncodingJSON: the fast ACK parser reads the
// ordinary bodies as encoding/json does and leaves it every other one.
func TestParseSettleAgreesWithEncodingJSON(t *testing.T) {
	fast := 0
	for _, b := range settleBodies {
		checkParseSettle(t, []byte(b))
		if _, ok := parseSettle([]byte(b), nil); ok {
			fast++
		}
	}
	if fast != 6 {
		t.Fatalf("parseSettle read %d of the bodies itself, want the 6 ordinary ones", fast)
	}
	// A batch ACK of 10,000 ids.
	var b bytes.Buffer
	b.WriteString(`{"deliveryIds":[`)
	for i := range 10000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"consumer:%032x"`, i)
	}
	b.WriteString(`]}`)
	r, ok := parseSettle(b.Bytes(), nil)
	if !ok || len(r.list) != 10000 || string(r.list[9999]) != fmt.Sprintf("consumer:%032x", 9999) {
		t.Fatalf("batch of 10,000 ids: ok %v, %d ids", ok, len(r.list))
	}
	checkParseSettle(t, b.Bytes())
}

func FuzzParseSettle(f *testing.F) {
	for _, b := range settleBodies {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkParseSettle(t, body) })
}

// TestParseKey: only `<name>:<32 lowercase hex digits>` is a key, and it
// round-trips through appendID.
func TestParseKey(t *testing.T) {
	var k deliveryKey
	for i := range k {
		k[i] = byte(255 - i*13)
	}
	id := string(appendID(nil, "consumer", &k))
	if got, ok := parseKey("consumer", id); !ok || got != k {
		t.Fatalf("parseKey(%q) = %x, %v", id, got, ok)
	}
	for _, bad := range []string{
		strings.ToUpper(id[:9]) + id[9:], id[:9] + strings.ToUpper(id[9:]), id[:len(id)-1], id + "0",
		"consumer:" + strings.Repeat("g", 32), "consumex:" + id[9:], "consumer;" + id[9:], "consumer:", "",
		"other:" + id[9:],
	} {
		if _, ok := parseKey("consumer", bad); ok {
			t.Fatalf("parseKey accepted %q", bad)
		}
	}
}

// TestPrintableASCII holds the eight-bytes-at-a-time check to a byte loop:
// every byte value at every position of strings of 1 to 20 bytes, alone
// and after another odd byte.
func TestPrintableASCII(t *testing.T) {
	slow := func(s []byte) bool {
		for _, c := range s {
			if c < 0x20 || c >= 0x7f || c == '\\' {
				return false
			}
		}
		return true
	}
	for n := 1; n <= 20; n++ {
		for pos := range n {
			for c := range 256 {
				for _, other := range []byte{'a', 0x7f, 0x1f, 0xff, '\\', '~', ' '} {
					s := bytes.Repeat([]byte{'a'}, n)
					s[pos] = byte(c)
					s[(pos+3)%n] = other
					if got, want := printableASCII(s), slow(s); got != want {
						t.Fatalf("printableASCII(%q) = %v, want %v", s, got, want)
					}
				}
			}
		}
	}
}

// TestHTMLSafe8 holds the eight-byte check to the htmlSafe table: every
// byte value at every position, next to safe and unsafe bytes.
func TestHTMLSafe8(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			for _, other := range []byte{'a', 0x7f, 0x1f, 0xff, '"', '<', '>', '&', '\\', '=', '?', ' '} {
				w := bytes.Repeat([]byte{'a'}, 8)
				w[(pos+5)%8] = other
				w[pos] = byte(c)
				want := true
				for _, b := range w {
					want = want && b < 0x80 && htmlSafe[b]
				}
				x := uint64(0)
				for i := 7; i >= 0; i-- {
					x = x<<8 | uint64(w[i])
				}
				if got := htmlSafe8(x); got && !want {
					t.Fatalf("htmlSafe8(%q) = true: an unsafe byte would be written as it is", w)
				} else if !got && want {
					t.Fatalf("htmlSafe8(%q) = false for safe bytes", w)
				}
			}
		}
	}
}
