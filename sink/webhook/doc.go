// Package webhook is the `webhook` sink (DESIGN §6): it POSTs the lines as NDJSON,
// one object per line:
//
//	{"id":"<feed>:<epoch>:<position>","feed":…,"epoch":"<16 hex>","position":…,"path":…,"line":"…"}
//
// plus "lineBase64" (the raw bytes) with `raw: true`; `line` is text with
// one U+FFFD per invalid UTF-8 byte. Headers: Content-Type
// application/x-ndjson, Idempotency-Key `<feed>:<epoch>:<first>-<last>`
// (the positions of the request's first and last lines), and the configured
// headers (which cannot replace those two). A request holds at most
// batchMaxLines lines and batchMaxBytes bytes of body (a single larger line
// goes alone) and never spans two epochs (a group batch has one epoch).
//
// Key stability. Before the first POST of a request the sink records its
// (epoch, first, last) in dataDir/state/<processor>.rec (see
// webhook_record.go), fsynced; after a 2xx, the applied position. Every
// retry sends the same bytes under the same key. After a restart, lines the
// record says were applied are skipped, and the recorded request is rebuilt
// with exactly its range — even when the group's batches now cut it
// differently: the sink keeps the lines of the range it already got
// (without reporting them durable) until the rest arrives, however long that
// takes. Only evidence that the rest cannot come — a line of the epoch past
// the range, a batch of another epoch (single-file feeds), the source
// waiting at an epoch barrier or on a window only these lines hold; on a
// glob feed, per file: its barrier, or its end under a full window
// (carry.go) — sends what it has under a new key, with a WARN (the file
// was replaced or cut short, the filters changed).
// A receiver that dedups on Idempotency-Key therefore applies every line
// once, across retries, lost responses and kill -9. (Go's HTTP transport
// may itself resend a request whose keep-alive connection broke, since it
// carries an Idempotency-Key: same bytes, same key.)
//
// Failures. 2xx: done. 408, 429, 5xx, 3xx (redirects are not followed) and
// network errors (including timeoutMillis): retried with the processor's
// backoff, waiting at least what Retry-After says (seconds or an HTTP date,
// at most 10 minutes); the subscriber is fenced meanwhile (the feed stalls
// with the reason). Any other 4xx is poison and is not retried. With
// onFailure deadLetter a poison request, and a request whose retry.attempts
// ran out, goes to the dead-letter ledger whole (one entry per line) and
// counts as done (a ledger write that fails is retried from the first line
// not written, and the request is not sent again once a line of it is in
// the ledger — after a restart either: the rest of its recorded range goes
// to the ledger); with hold the same request is retried at the backoff cap
// until it succeeds or POST /admin/release gives its lines up. The unit of
// failure is the request, never a line of it: splitting a request could
// change its key after the receiver applied it.
//
// The sink takes a checkpoint hold: the queue's ack point moves when a
// group batch is fully acknowledged by the receiver (or dead-lettered,
// released, filtered).
//
// Glob feeds. Files (epochs) interleave, so the record keeps the applied
// position and the recorded request of each epoch (layout 2, epochs.go),
// and each recorded request is rebuilt by a carry of its own while the
// other files' lines go on (the carry's epoch passes a full window:
// carry.go): exactly-once at a deduping receiver holds per input file.
// Entries are dropped once their stream's pointer is committed past them,
// or holds their epoch no more, never while it is behind them: the record
// grows instead (epochs.go, "Bound").
//
// The record file, dataDir/state/<processor>.rec, is described in record.go
// (layout 1, a single-file feed) and epochs.go (layout 2, a glob feed).
package webhook
