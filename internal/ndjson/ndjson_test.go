package ndjson

import (
	"bytes"
	"testing"
)

// TestObject: the object of DESIGN §6, byte for byte.
func TestObject(t *testing.T) {
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	var o Object
	o.Fill("app", "/var/log/app.log", 0xc3a1, 42, []byte("a <b> \"c\"\xff"), false)
	enc.Encode(&o)
	o.Fill("app", "/l", 1, 7, []byte("x"), true)
	enc.Encode(&o)
	want := `{"id":"app:000000000000c3a1:42","feed":"app","epoch":"000000000000c3a1","position":42,"path":"/var/log/app.log","line":"a <b> \"c\"\ufffd"}` + "\n" +
		`{"id":"app:0000000000000001:7","feed":"app","epoch":"0000000000000001","position":7,"path":"/l","line":"x","lineBase64":"eA=="}` + "\n"
	if buf.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), want)
	}
}
