package feed_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"tailfeed/feed"
	"tailfeed/overload"
)

// BenchmarkPublishDispatch measures the hand-off from a source to its
// subscribers: each op fills a pooled batch of N 100-byte lines (the one
// copy a line makes), publishes it to every queue, and acknowledges what the
// consumers finished (PollAcks). One goroutine per queue pops, releases and
// bumps dispatched, as a group does around its processor. allocs/line is
// the allocations of the whole pipeline (both sides) divided by the lines
// moved: the hot path's target is < 0.01.
func BenchmarkPublishDispatch(b *testing.B) {
	for _, subs := range []int{1, 2} {
		for _, n := range []int{64, 512} {
			b.Run(fmt.Sprintf("subs=%d/lines=%d", subs, n), func(b *testing.B) {
				benchPublish(b, subs, n)
			})
		}
	}
}

func benchPublish(b *testing.B, subs, n int) {
	const lineBytes = 100
	data, starts, lens, ends := benchLines(n, lineBytes)
	queues := make([]*feed.Queue, subs)
	for i := range queues {
		queues[i] = feed.NewQueue(fmt.Sprint("q", i), 2*n, 2*n*lineBytes, overload.Policy{Kind: overload.Pause})
	}
	pub := feed.NewPublisher("bench", queues, 65536, n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, subs)
	for _, q := range queues {
		go consume(ctx, q, pub, done)
	}
	defer func() {
		cancel()
		for range queues {
			<-done
		}
	}()
	publishOne := func() {
		batch := feed.NewBatch()
		batch.Feed, batch.Path, batch.Epoch = "bench", "/bench.log", 1
		batch.SetLines(data, starts, lens, ends)
		for i := range ends { // the next read's positions
			ends[i] += int64(len(data))
		}
		for !pub.TryPublish(batch) {
			pub.PollAcks()
			<-pub.Wake()
		}
		pub.PollAcks()
	}
	for range 64 { // fill the pools
		publishOne()
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.SetBytes(int64(n * lineBytes))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		publishOne()
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	lines := float64(b.N) * float64(n)
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/lines, "allocs/line")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/lines, "ns/line")
}

// consume is a group without a processor: pop, release, publish the
// dispatched count once per batch, wake the source.
func consume(ctx context.Context, q *feed.Queue, pub *feed.Publisher, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	for {
		batch, err := q.Pop(ctx)
		if err != nil {
			return
		}
		k := batch.Len()
		batch.Release()
		q.AddDispatched(uint64(k))
		pub.Poke()
	}
}

// benchLines lays out n lines of size bytes ('\n' included) as the splitter
// reports them.
func benchLines(n, size int) (data []byte, starts, lens []int32, ends []int64) {
	data = make([]byte, n*size)
	for i := range data {
		data[i] = 'a' + byte(i%26)
		if i%size == size-1 {
			data[i] = '\n'
		}
	}
	for i := 0; i < n; i++ {
		starts = append(starts, int32(i*size))
		lens = append(lens, int32(size-1))
		ends = append(ends, int64((i+1)*size))
	}
	return data, starts, lens, ends
}

// TestSetLinesJoined checks the batch buffer layout the file sink writes
// as is: every line followed by '\n', whatever its terminator, both when
// the lines are packed (one memmove) and when they are not (CRLF, pieces).
func TestSetLinesJoined(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   string
		starts []int32
		lens   []int32
	}{
		{"LF", "ab\n\ncd\n", []int32{0, 3, 4}, []int32{2, 0, 2}},
		{"CR", "ab\rcd\r", []int32{0, 3}, []int32{2, 2}},
		{"CRLF", "ab\r\ncd\r\n", []int32{0, 4}, []int32{2, 2}},
		{"pieces", "abcdef\n", []int32{0, 2, 4}, []int32{2, 2, 2}},
		{"mixed", "a\r\nb\nc\rd\n", []int32{0, 3, 5, 7}, []int32{1, 1, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ends := make([]int64, len(tc.starts))
			var want []byte
			for i := range tc.starts {
				ends[i] = int64(i + 1)
				want = append(want, tc.data[tc.starts[i]:tc.starts[i]+tc.lens[i]]...)
				want = append(want, '\n')
			}
			b := feed.NewBatch()
			b.AppendLine([]byte("stale line from a pooled batch"), 99)
			b.SetLines([]byte(tc.data), tc.starts, tc.lens, ends)
			got, ok := b.Joined()
			if !ok || string(got) != string(want) {
				t.Fatalf("Joined = %q, %v; want %q", got, ok, want)
			}
			for i, l := range b.Lines {
				if w := tc.data[tc.starts[i] : tc.starts[i]+tc.lens[i]]; string(l) != w || cap(l) != len(l) {
					t.Fatalf("line %d = %q (cap %d), want %q", i, l, cap(l), w)
				}
			}
			if b.Bytes() != len(want)-len(tc.starts) {
				t.Fatalf("Bytes = %d, want %d", b.Bytes(), len(want)-len(tc.starts))
			}
			var view feed.Batch
			view.Share(b)
			if got, ok := view.Joined(); !ok || string(got) != string(want) {
				t.Fatalf("shared view: Joined = %q, %v", got, ok)
			}
			part := feed.Batch{Lines: b.Lines[1:], Ends: b.Ends[1:]}
			if _, ok := part.Joined(); ok {
				t.Fatal("a partial view claims to be joined")
			}
			b.Retain(1)
			b.Release()
		})
	}
}

// TestAppendLineJoined checks that growing the buffer keeps earlier lines
// and the layout.
func TestAppendLineJoined(t *testing.T) {
	b := feed.NewBatch()
	var want []byte
	for i := range 200 {
		line := []byte(fmt.Sprintf("line %d %s", i, string(make([]byte, i%7))))
		b.AppendLine(line, int64(i))
		want = append(append(want, line...), '\n')
	}
	got, ok := b.Joined()
	if !ok || string(got) != string(want) {
		t.Fatalf("Joined mismatch after growth (ok=%v)", ok)
	}
	if b.Lines[0][0] != 'l' || string(b.Lines[199][:8]) != "line 199" {
		t.Fatalf("views not rebuilt: %q %q", b.Lines[0], b.Lines[199])
	}
}
