// Package config reads, defaults and validates the tailfeed YAML config
// (DESIGN §7).
//
//	cfg, err := config.Load("tailfeed.yaml")
//	if err != nil {
//		fmt.Fprintln(os.Stderr, err) // one "FILE:LINE: message" per line
//		os.Exit(2)
//	}
//
// # Contract
//
// Load reads a file and calls Parse. Parse returns either a *Config with every
// default filled in (defaults.go holds them all) and every path absolute, or
// nil and an *Errors: every problem found, sorted by line, one per line in
// Error(), each "FILE:LINE: message" ("FILE: message" when there is no line:
// a missing or unreadable file, an empty document, no feeds key at all).
// FILE is the name given to Load or Parse ("<config>" for an unnamed Parse);
// Config.File is its absolute form. Messages quote the YAML key, as in
// "feeds[0].queueCapacity: must be positive, got -3". The checks need no file
// system: Parse never stats, opens or creates a path. Creating and writing
// dataDir is the run command's job (its errors use DataDirLine).
//
// Errors are reported for: YAML syntax (with the line), a second non-empty
// YAML document, an empty document, a top level that is not a mapping,
// unknown and duplicate keys in every mapping, wrong types, bad enum values,
// out-of-range numbers, missing required keys (feed name and path; processor
// name, feed and type; path for file, url for webhook), names outside
// [A-Za-z0-9._-]+, duplicate feed names, a glob feed named as another feed's
// file under dataDir/feeds (a single-file feed's <feed>.ptr, any feed's
// <feed>.epochs, or a name a reload moves them aside to, *.ptr.<epoch>.old,
// *.epochs.<epoch>.old: its pointers' directory would be that file),
// duplicate processor names, a
// processor naming no feed, an overload.subscribers key naming no processor
// of that feed, match/exclude that do not compile as RE2, a rotatedNames
// entry that is not a well-formed filepath.Match glob over a base name (empty,
// holding a '/', or malformed) or an empty rotatedNames list, a retry.maxMillis
// below retry.initialMillis, a webhook url that is not http(s) with a host,
// two file processors on one path, a file processor writing a feed's input
// or tailfeed's own state in dataDir, no feeds.
//
// # Decisions where DESIGN is silent
//
//   - Lines. An error about a key is reported at the key's line (also when
//     its value is on the next line); a missing key at its entry's line (the
//     "- name:" line of a list item). yaml.v3 omits the line of syntax errors
//     on line 1 and reports parser errors 0-based; both are mended, and
//     control characters, invalid UTF-8 and unknown aliases are located.
//   - Null. A key whose value is null (key:, ~, null) counts as absent: it
//     takes its default, or is "missing" when required.
//   - Types. Integers must be YAML integers: "100" (quoted) and 1.5 are
//     errors, 0x10 and 1_000 are fine. jitter takes an integer or a float.
//     Booleans are true/false. String keys take any scalar as written
//     (name: 2024 is the name "2024").
//   - Enums are case-sensitive, as written in DESIGN (readStrategy and
//     policy in capitals, the rest lower case; deadLetter in camel case);
//     a near miss gets a "did you mean" hint. readStrategy COMMITED is read
//     as COMMITTED.
//   - Ranges. Every count, size and interval must be positive, except
//     rotateWaitMillis, which may be 0 (switch files as soon as the old one
//     is read to its end). spinBoundMillis and blockDeadlineMillis must be
//     positive too, so that 0 in a SubscriberOverload always means "the
//     feed's". Upper bounds keep values usable: durations (…Millis) at most
//     one year (a time.Duration holds them), counts (queueCapacity,
//     maxPendingAcks, maxInFlight, batchMaxLines, retry.attempts) at most
//     16,777,216, byte sizes (maxLineBytes, queueBytes, batchMaxBytes) at
//     most 1 GiB. jitter is in [0, 1].
//   - Names of feeds and processors are also file names (feeds/<feed>.ptr,
//     dlq/<processor>.jsonl): "." and ".." are refused, and a name is at most
//     200 bytes. Processor names are unique across all feeds (the HTTP API
//     addresses a subscriber by name alone).
//   - Keys of another processor type are accepted on any processor and
//     ignored by it (url on a file processor, path on a pull processor,
//     exactlyOnce on webhook…), so an entry can change type by editing one
//     line. They are still type- and range-checked.
//   - processors may be empty or absent: such a feed is read and its pointer
//     moves with nothing holding it. feeds may not.
//   - overload.subscribers: an entry may set any of policy, spinBoundMillis,
//     blockDeadlineMillis; Parse fills the rest from the feed, so the map
//     holds effective values. An entry with no value (hook:) changes nothing.
//     Processor.Policy also inherits empty/zero fields, for hand-built configs.
//   - Paths (dataDir, feeds[].path, file processors' path) are cleaned and
//     made absolute against the config file's directory; there is no ~ or
//     environment expansion (TAILFEED_TOKEN is the run command's). Paths are
//     compared after cleaning, without following symlinks, so two spellings
//     of one file through a symlink are not caught. Two feeds may tail the
//     same path (each has its own pointer). A file processor may not write
//     tailfeed's own state: dataDir itself, dataDir/LOCK, or anything under
//     dataDir/feeds, dlq or state.
//   - status.listen must be host:port with a numeric port (0 picks a free
//     one); the host may be empty (all interfaces).
//   - webhook headers must be valid HTTP header names, values without CR, LF
//     or NUL, not repeated ignoring case, and not Idempotency-Key, which the
//     sink sets per batch (DESIGN §6).
//   - YAML anchors, aliases and merge keys (<<) work; explicit keys win over
//     merged ones. A trailing empty document ("---" at the end) is ignored.
//   - match on a count processor may hold a named group "key"; nothing else
//     about a pattern is checked beyond compiling.
//
// # Sink types and common keys
//
// Config holds no list of sink types. Each package under sink/ registers
// its type (RegisterSink, through sink.Register): its name, the keys only
// it reads, a Decode over the exported Section API (the same typed
// accessors, FILE:LINE errors and ${VAR} expansion as the rest of the
// file) that returns the type's own settings, kept in Processor.Settings,
// and an optional Check across entries. kafka, nats and postgres keep
// their keys, settings and checks in sink/<type>/config.go; a new sink
// type is a new package and touches nothing here. A type is known to a
// program that imports its package: the tailfeed binary imports every one
// (internal/daemon/sinks.go), for run and validate alike. The unknown-type
// error lists the registered names, sorted.
//
// Common keys, decoded here for every processor into Processor's fields:
// name, feed, type, match, exclude, onFailure, retry, exactlyOnce, format,
// tls, url, timeoutMillis, batchMaxLines, batchMaxBytes, and the keys of
// the sinks built into the daemon's first version: path, fsync,
// fsyncIntervalMillis, mode (file), ackTimeoutMillis, maxInFlight (pull),
// headers, raw (webhook). Decision: these stay common because most are
// read by several types (url: webhook and nats; timeoutMillis: webhook,
// kafka, nats, postgres; exactlyOnce: file, count, kafka, nats;
// fsyncIntervalMillis: file and count; tls: webhook, kafka, nats), path
// enters checks across entries (a file sink may not write a feed's input,
// tailfeed's state or another's output: SinkSpec.Output), and a key of
// another type is decoded into its field on any entry (an entry changes
// type by editing one line). What a type requires of its own entries is
// its own Decode's: file needs path, webhook url, nats url (its own form:
// SinkSpec.OwnURL), stream and subject, kafka brokers and topic, postgres
// dsn and table; format applies to the types with SinkSpec.Formats.
package config
