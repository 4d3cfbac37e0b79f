package daemon

import (
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestAckBodyNotAllocatedBeforeItComes (review of issue 14's fast
// ACK path): status.ReadBody now allocates the whole announced
// Content-Length (up to 1 MiB) before a byte of the body arrived, so each
// connection that announces a 1 MiB ACK body and sends one byte holds
// 1 MiB of heap for up to bodyReadTimeout (10 s). With the default
// status.maxConnections (256) that is ~256 MiB on demand from any client
// allowed to POST /v1/ack (anyone on the listener when no token is set,
// the default). Before, io.ReadAll grew the buffer with the bytes that
// came. 100 such connections here: the heap must not grow by more than a
// few KiB per connection (20 MiB allowed for all of them).
func TestAckBodyNotAllocatedBeforeItComes(t *testing.T) {
	e := start(t, pullConfig, Options{})
	addr := e.base[len("http://"):]
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 100 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /v1/ack HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{")
	}
	time.Sleep(500 * time.Millisecond) // the handlers are waiting for the rest
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	if grew > 20<<20 {
		t.Fatalf("100 connections that sent 1 byte of an announced 1 MiB ACK body hold +%d MiB of heap (want < 20 MiB)", grew>>20)
	}
}
