// Package count is the `count` processor (DESIGN §6), a stateful example:
// it counts lines per value of the named group `key` of its `match` and
// saves the counts with the applied (epoch, position) per feed in
// dataDir/state/<processor>.json (see Count for the format and the rules).
// GET /v1/state/{processor} serves the counts.
package count
