package elasticsearch

import (
	"errors"
	"fmt"

	"github.com/logpond/logpond/internal/jsonvalid"
	"github.com/tidwall/gjson"
)

// filterPath asks Elasticsearch to return only what the output reads of a
// bulk response (Logstash asks for the same), which keeps responses to a
// few bytes per item.
const filterPath = "errors,items.*.status,items.*.error.type,items.*.error.reason"

// itemResult is Elasticsearch's answer for one bulk item.
type itemResult struct {
	status  int
	errType string
	reason  string
}

// errBadResponse is a 2xx bulk response the output cannot use: not JSON,
// or not one item per action. Nothing in it can be trusted, so the whole
// request is retried.
var errBadResponse = errors.New("unusable bulk response")

// parseBulkResponse returns the item results of a bulk response, in the
// order of the request's actions. Items are matched by position, never by
// their action key: some Elasticsearch-compatible engines answer a create
// under "index" (docs/design.md, §7). results is reused when it has room.
func parseBulkResponse(body []byte, n int, results []itemResult) ([]itemResult, error) {
	// logpond's validator (internal/jsonvalid), as for events: a bulk
	// answer holds an item per event, and gjson's validator cost more
	// than reading the answer.
	if !jsonvalid.Valid(body) {
		return nil, fmt.Errorf("%w: not JSON (%d bytes)", errBadResponse, len(body))
	}
	results = results[:0]
	if e := gjson.GetBytes(body, "errors"); e.Type == gjson.False {
		// The usual answer: every item succeeded. Count them (one pass
		// over the items), and trust the flag for their status: 201
		// Created, the answer to a create (the only action the output
		// sends).
		c := gjson.GetBytes(body, "items.#")
		if c.Type != gjson.Number {
			return nil, fmt.Errorf("%w: no items array", errBadResponse)
		}
		if c.Int() != int64(n) {
			return nil, fmt.Errorf("%w: %d items for %d actions", errBadResponse, c.Int(), n)
		}
		for range n {
			results = append(results, itemResult{status: 201})
		}
		return results, nil
	}
	items := gjson.GetBytes(body, "items")
	if !items.IsArray() {
		return nil, fmt.Errorf("%w: no items array", errBadResponse)
	}
	var bad error
	items.ForEach(func(_, item gjson.Result) bool {
		// Each item is an object with one member, named after the action.
		var res itemResult
		found := false
		item.ForEach(func(_, v gjson.Result) bool {
			found = true
			res.status = int(v.Get("status").Int())
			if e := v.Get("error"); e.Exists() {
				res.errType = e.Get("type").String()
				res.reason = e.Get("reason").String()
				if res.errType == "" && e.Type == gjson.String {
					res.reason = e.Str
				}
			}
			return false
		})
		if !found || res.status == 0 {
			bad = fmt.Errorf("%w: item %d has no status", errBadResponse, len(results))
			return false
		}
		results = append(results, res)
		return true
	})
	if bad != nil {
		return nil, bad
	}
	if len(results) != n {
		return nil, fmt.Errorf("%w: %d items for %d actions", errBadResponse, len(results), n)
	}
	return results, nil
}

// errorBody summarises an Elasticsearch error response ({"error":{"type",
// "reason"},"status"}) for a log line or a dead letter.
func errorBody(body []byte) (errType, reason string) {
	if !gjson.ValidBytes(body) {
		const max = 200
		if len(body) > max {
			body = body[:max]
		}
		return "", string(body)
	}
	e := gjson.GetBytes(body, "error")
	if e.Type == gjson.String {
		return "", e.Str
	}
	return e.Get("type").String(), e.Get("reason").String()
}

// outcome is what the output does with an item.
type outcome int

const (
	outcomeDone  outcome = iota // stored (or already stored)
	outcomeRetry                // try again later
	outcomeDead                 // rejected for good: dead-letter it
)

// classify decides an item's fate from its result. hasID says the item
// was a create with an id of logpond's (or the event's own): a 409 then
// means an earlier attempt stored it, which is success.
//
// Only what the event itself causes is dead-lettered, as Logstash does
// (its DLQ codes): 400 (a mapping or parsing error, an invalid index name,
// a missing ingest pipeline) and 404 (an index that does not exist and may
// not be created). A 409 without an id of logpond's is a real conflict
// with another document: retrying cannot store it either. Every other
// failure belongs to the cluster's state and may pass: 429 and 5xx, and
// also 401 and 403 (a cluster_block_exception such as a flood-stage disk
// watermark's read-only block, a security exception until privileges are
// fixed), so those items are retried, for ever, while the events wait in
// the ledger. An es_rejected_execution_exception is retried whatever its
// status.
func classify(r itemResult, hasID bool) outcome {
	switch {
	case r.status >= 200 && r.status < 300:
		return outcomeDone
	case r.status == 409 && hasID:
		return outcomeDone
	case r.errType == "es_rejected_execution_exception":
		return outcomeRetry
	case r.status == 400 || r.status == 404 || r.status == 409:
		return outcomeDead
	}
	return outcomeRetry
}
