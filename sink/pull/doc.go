// Package pull is the `pull` subscriber (DESIGN §6, §9 "Pull API"): it keeps the
// lines its group hands it and lends them to HTTP clients, which
// acknowledge every delivery (GET /v1/pull/{subscriber}, POST /v1/ack,
// POST /v1/nack; the routes are in http.go, registered through sink.Type).
//
// The pointer follows the slowest client. Pull takes a checkpoint hold on
// its queue: ProcessBatch copies the lines in and returns at once, and the
// queue's ack point moves (DurableThrough) only as the contiguous prefix of
// lines that are acknowledged, dead-lettered or filtered grows. An ACK of
// line 7 waits for lines 1–6.
//
// Deliveries. A pull hands out the waiting lines, lowest queue position
// first (so redeliveries go before new lines), each with a fresh
// deliveryId: `<subscriber>:<32 hex digits>`, 128 bits from a ChaCha8
// generator seeded from crypto/rand. The subscriber part routes an ACK; the
// random part makes an id unguessable and valid for one delivery of one run
// (ids live only in memory, so an id from an earlier run is unknown, never
// another line's). At most maxInFlight deliveries are out unacknowledged at
// a time; ProcessBatch also stops taking lines (the group waits, the queue
// fills, the feed pauses) while maxInFlight lines are unacknowledged.
//
// Failures. A delivery not acknowledged within ackTimeout failed; it is
// handed out again (attempt + 1) after one backoff step of the retry policy
// — exponential from retry.initialMillis to retry.maxMillis, the jitter
// only shortening a step, so the redelivery is never later than one full
// step after the timeout. A NACK fails a delivery too, and its line is
// handed out again at once. After retry.attempts failed deliveries of a
// line, onFailure applies: deadLetter writes it to the dead-letter ledger
// (it then counts as processed); hold keeps redelivering it at the backoff
// cap and fences the subscriber (the feed stalls with the reason) until a
// client acknowledges it or POST /admin/release gives it up. A late ACK of
// a timed-out delivery still counts until the line is handed out again;
// a NACKed id is dead at once. Attempts are counted per run.
//
// Replayed dead letters (POST /admin/dlq/{processor}/replay, DESIGN §12)
// are queued at once (QueueReplay: the call does not wait for a client) and
// handed out before other lines, with sequence 0 and no queue position. An
// entry leaves the ledger when a client acknowledges its delivery (the ACK
// answers once the ledger was rewritten). A NACK or an ACK timeout hands it
// out again like any line (attempt + 1, after one backoff step for a
// timeout); after retry.attempts failed deliveries it is dropped from the
// subscriber and stays in the ledger, once (neither dead-lettered again nor
// held, whatever onFailure says). An entry already handed out by a replay
// is not queued twice. A queued entry lives in memory only: after a restart
// it is still in the ledger and not queued (replay again).
//
// Speed (issue 14: ≥ 1 M lines/s with max=10000 batches and batch ACKs).
// Events are appended into pooled buffers by a hand-written encoder whose
// output is byte for byte encoding/json's (encode.go; tests and a fuzz
// target hold it to that), and ordinary ACK bodies are parsed without
// reflection (any other body still goes through encoding/json, so every
// answer to it is unchanged). A deliveryId is found in O(1) through its
// random bits (ids.go), fresh lines and ACK deadlines are FIFOs (only
// redeliveries, replays and backoff timers use heaps), and a batch's
// entries and line copies are one allocation each, made outside the lock.
//
// Pull applies the processor's match/exclude itself (it takes them from
// the group), so every line of a batch has its own queue mark; a filtered
// line counts as done as soon as the lines before it are.
package pull
