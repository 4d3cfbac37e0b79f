package main

import (
	"errors"
	"net"
	"net/http"
	"syscall"
	"testing"
)

// TestFetchReportKeepsTheCause: a daemon that does not listen is an error
// that still says why (errors.Is finds ECONNREFUSED), not only its text.
func TestFetchReportKeepsTheCause(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, _, err = fetchReport(&http.Client{}, "http://"+addr+"/feed.status")
	if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("fetchReport from a closed port: %v, want an error wrapping ECONNREFUSED", err)
	}
}
