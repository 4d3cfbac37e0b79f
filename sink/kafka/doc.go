// Package kafka is the `kafka` sink (DESIGN §11), on franz-go's kgo.
//
// Every line becomes one record of `topic`: the value is the raw line, the
// key the `key` template over {instance}, {feed}, {path} and {epoch}
// (default "{instance}:{feed}", so one file's lines keep their order in one
// partition; "" sends no key), and the headers tailfeed-instance,
// tailfeed-feed, tailfeed-epoch (16 lowercase hex), tailfeed-position
// (decimal) and tailfeed-path. The producer is idempotent and waits for the
// acks of all in-sync replicas; a group batch is produced whole (kgo cuts it
// into the brokers' own batches, ProducerBatchMaxBytes) and the lines count
// as processed only when every record of it was acknowledged.
//
// With exactlyOnce the producer is transactional (transactionalId, default
// tailfeed-<instance>-<processor>, stable across restarts): each batch's
// records and one offsets record in offsetsTopic (key
// <instance>:<processor>:<feed>:<epoch>, value
// {"feed","fileKey","epoch","position"}) commit in one transaction. A
// produce error aborts the transaction, never a partial commit. A commit
// whose outcome is unknown drops the client: the next attempt takes a new
// producer id (Kafka ends the older producer's transaction first) and reads
// the offsets topic again, so it knows whether the batch landed. At the
// first batch the sink reads offsetsTopic to its end, read-committed, and
// skips the lines AlreadyApplied holds for the stored position of their
// epoch. The end is the high watermark as of the start, not the last
// stable offset, which another sidecar's open transaction on a shared
// offsets topic holds back: the read is uncommitted and a record counts
// once its transaction's commit marker follows it (readOffsets).
//
// The offsets record advances over the lines the group finished without
// handing them here (filtered out by match/exclude, dead-lettered, released
// by the group; DESIGN §11): a batch's offsets record takes the end of the
// lines its batch finishes (feed.Batch.Done), past its last record when the
// batch ends in such lines, and a batch of none of its lines (the filters
// emptied it, or a dead letter passed) commits a transaction holding the
// offsets record alone. A replayed dead letter has no position and moves
// nothing. DoneThrough (processor.DoneThrougher, called once at start)
// reports that record per epoch of the processor's feed, read as above;
// without exactlyOnce the sink keeps no record and reports none.
//
// Failures (DESIGN §11). A connection failure, a timeout (timeoutMillis
// per attempt), a missing topic or any other unavailability is retried here
// with the processor's backoff, at the cap for as long as it takes, whatever
// onFailure says; the subscriber is fenced meanwhile (the feed stalls with
// the reason) and nothing is dead-lettered. A record the brokers refuse
// (MESSAGE_TOO_LARGE, INVALID_RECORD, a policy violation, an authorization
// error, …) is returned to the group: its retries, then onFailure (hold, or
// deadLetter of that line alone).
//
// The sink reaches the brokers on the first batch, not at start: an engine
// that is down at start stalls the feed instead of failing the daemon.
package kafka
