// Package journal is logpond's write-ahead journal: the small store every
// acknowledgement waits on (design.md §4). Appends are gathered by one
// committer into groups, each written with one WriteBatch and made durable
// with one fsync before any caller in it is told its LSN.
package journal
