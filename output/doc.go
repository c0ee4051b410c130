// Package output holds logpond's outputs. The Elasticsearch output drains
// the ledger from its cursor in bulk requests, with document ids derived from
// (stream id, LSN, position) so a replay writes nothing twice, and advances
// its cursor only over records whose every event is done
// (docs/design.md, §7).
package output
