package nats

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
)

// A store failure inside a fast batch (message 3 of 10) is not the
// batch's end: the server goes on with the later messages. waitFast
// returned at the failure, so the subject was read back while the batch
// was still being stored — it could end before the failed line, clear the
// suspicion, and the chain then skipped the failed line as applied (the
// thirty-seventh session's CI4: TestExactlyOnceStoreFailureInBatchHolds,
// not fenced in 10 s, the read back having come before the batch's
// commit). It waits for the batch's final reply now (or its timeout).
func TestStoreFailureInBatchWaitsForTheBatchEnd(t *testing.T) {
	s := &Sink{cfg: Config{Stream: "LOGS", Timeout: 5 * time.Second}, kick: make(chan struct{}), log: hclog.NewNullLogger()}
	a := &acker{inbox: "_INBOX.x.", ch: make(chan *nats.Msg, 4)}
	base := "_INBOX.x.x-1."
	a.ch <- &nats.Msg{Subject: base + "1024.fail.3.1.$FI",
		Data: []byte(`{"error":{"code":503,"err_code":10077,"description":"error saving message: disk I/O error"},"stream":"LOGS"}`)}
	var st fastState
	var tm *time.Timer
	done := make(chan error, 1)
	go func() {
		done <- s.waitFast(context.Background(), a, s.gen.Load(), base, "logs.app", &st, &tm, func() bool { return st.done || st.gone })
	}()
	select {
	case <-done:
		t.Fatal("waitFast returned at the store failure of message 3, before the batch's end")
	case <-time.After(300 * time.Millisecond):
	}
	a.ch <- &nats.Msg{Subject: base + "1024.fail.10.2.$FI", Data: []byte(`{"stream":"LOGS","batch":"x-1","count":10,"seq":20}`)}
	select {
	case err := <-done:
		if err != nil || !st.done || st.storeFail != 3 {
			t.Fatalf("after the final reply: err %v, done %v, storeFail %d; want nil, true, 3", err, st.done, st.storeFail)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waitFast did not return after the batch's final reply")
	}
}
