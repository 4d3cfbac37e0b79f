package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"

	"tailfeed/internal/natstest"

	"github.com/nats-io/nats.go/jetstream"
)

// Review of the nats sink (issue 14 acceptance 4 with the stream the sink
// creates): TestNatsSkewedRestore makes its stream by hand with a 100 ms
// duplicate window; here createStream makes it (DESIGN §11: a 2-minute
// duplicate window). Every message after sequence 3000 is deleted while
// tailfeed is stopped, and the next start catches the sink up from the
// subject's last message. The stream must end with every line exactly
// once and the feed report lossless only if it does.
func TestNatsSkewedRestoreCreatedStream(t *testing.T) {
	srv := natstest.Start(t, natstest.Options{})
	_, js := srv.Connect(t)
	ctx := context.Background()
	cfg := strings.ReplaceAll(natsRestoreConfig, "{{NATS}}", srv.URL())
	cfg = strings.Replace(cfg, "    exactlyOnce: true\n", "    exactlyOnce: true\n    createStream: true\n", 1)
	e := newEnv(t, cfg)
	in := newInput(t, e.path("in.log"))
	restore := func() {
		st, err := js.Stream(ctx, "EXACT")
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Duplicates == 0 || !info.Config.AllowBatchPublish {
			t.Fatalf("created stream: duplicates %v allow_batched %v", info.Config.Duplicates, info.Config.AllowBatchPublish)
		}
		for seq := uint64(3001); seq <= info.State.LastSeq; seq++ {
			if err := st.DeleteMsg(ctx, seq); err != nil {
				t.Fatalf("delete %d: %v", seq, err)
			}
		}
	}
	r, _ := restoreRun(t, e, in, false, true, func() {}, restore)
	got := streamBodies(t, js, "EXACT")
	missing := 0
	for _, s := range in.texts {
		if got[s] == 0 {
			missing++
		}
	}
	f := r.feed(t, "app")
	if missing > 0 {
		t.Errorf("stream EXACT lacks %d of %d lines after the catch-up; the feed reports lossless %v (report %v), lostTails %d",
			missing, len(in.texts), f.Lossless, r.Lossless, f.LostTails)
	}
	checkRestored(t, "stream EXACT", got, in, false, r)
}

// streamBodies counts the bodies of every message the stream holds, read
// one sequence at a time (natstest.Messages waits for the stream's last
// sequence, which a delete can leave without a message).
func streamBodies(t *testing.T, js jetstream.JetStream, stream string) map[string]int {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		got[string(m.Data)]++
	}
	t.Logf("stream %s: sequences %d..%d, %d messages", stream, info.State.FirstSeq, info.State.LastSeq, info.State.Msgs)
	return got
}
