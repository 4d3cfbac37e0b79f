package feed

import "testing"

// An awaited epoch (Want) passes a full window: on a glob feed the window
// fills with other files' lines that a processor holding the awaited lines
// back keeps unacknowledged, and the lines it waits for must not wait
// behind them. The positions of lines past the window stay exact (the ring
// of ends grows), and once the epoch is no longer awaited the window
// refuses again.
func TestWantedEpochPassesAFullWindow(t *testing.T) {
	q := pauseQ("q", 1000)
	p := NewPublisher("f", []*Queue{q}, 8, 4)
	var src lineSrc
	mustPublish(t, p, src.batch(4))
	mustPublish(t, p, src.batch(4)) // 8 pending: full
	var osrc lineSrc
	other := osrc.batch(2)
	other.Epoch = 9
	if p.TryPublish(other) {
		t.Fatal("a batch of another epoch passed a full window")
	}
	if acked, full := p.WindowFullAt(); !full || acked != 0 {
		t.Fatalf("WindowFullAt = %d, %v", acked, full)
	}
	other.Release()
	p.Want(7, true)
	select {
	case <-p.Wake():
	default:
		t.Fatal("Want did not wake the source")
	}
	for i := 0; i < 10; i++ { // 40 lines past a window of 8 (its ring held 12)
		mustPublish(t, p, src.batch(4))
	}
	if p.Pending() != 48 {
		t.Fatalf("pending %d, want 48", p.Pending())
	}
	if !p.Paused() || p.PauseReason() != "window full" || p.Pauses() != 1 {
		t.Fatalf("paused %v (%q, %d pauses): the feed stays paused for every other epoch", p.Paused(), p.PauseReason(), p.Pauses())
	}
	p.Want(7, false)
	if p.TryPublish(src.batch(1)) {
		t.Fatal("the epoch no longer awaited passed a full window")
	}
	for seq := uint64(4); seq <= 48; seq += 4 { // every batch's last position
		b := q.TryPop()
		b.Release()
		q.AddDispatched(4)
		wantAck(t, p.PollAcks(), seq, src.end(seq))
	}
	if p.Pending() != 0 {
		t.Fatalf("pending %d after every line was acknowledged", p.Pending())
	}
}
