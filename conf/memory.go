package conf

import (
	"runtime"

	"github.com/logpond/logpond/record"
)

// Memory is the formula of docs/operations.md ("Memory"): what logpond's
// bounded buffers may hold with a configuration, part by part. logpond's
// soft memory limit is 90% of its Total, unless GOMEMLIMIT is set.
type Memory struct {
	// Input is input.beats.max_inflight_bytes: events read from clients
	// and not yet durable.
	Input int64
	// Connections is input.beats.max_connections × ConnectionBytes: each
	// connection's read buffers while it sends a batch.
	Connections int64
	// InputCompression is InputCompressionBytes: with ledger.compression
	// = "zstd", the input's record compressors, one per CPU.
	InputCompression int64
	// JournalTail is JournalTailBytes: the journal's in-memory copy of
	// its recent records, which the flusher moves to the ledger.
	JournalTail int64
	// JournalWrite is 4 × journal.max_group_bytes: the group being
	// written and the one being fsynced, each with its write buffer.
	JournalWrite int64
	// JournalRead is JournalReadBytes: the journal's file reads, one at
	// a time, its recovery scan at open and the flusher's reads of its
	// files.
	JournalRead int64
	// Ledger is LedgerBuffersBytes, the ledger's write buffer and the
	// flusher's batch held for it, plus LedgerReadCache, the read
	// cache the outputs share, plus one read window (LedgerReadWindowBytes)
	// per output beyond the first, plus LedgerDecompressionBytes: each
	// enabled output's decompressor and its buffer.
	Ledger int64
	// Output is the sum over the enabled outputs (OutputBytes): each
	// drains the ledger at its own pace with its own buffers.
	Output int64
	// Overhead is RuntimeOverheadBytes: the Go runtime, code, goroutine
	// stacks, TLS and metrics.
	Overhead int64
}

// ConnectionBytes is what one connection may hold in read buffers while
// it sends a batch: a 16 KiB socket buffer and a 64 KiB decompression
// window.
const ConnectionBytes = 80 << 10

// LedgerBuffersBytes is the ledger writer's buffer plus the output's and
// tools' ledger readers' read chunks, in the formula.
const LedgerBuffersBytes = 4 << 20

// LedgerReadCacheBytes is the ledger's read cache, shared by the outputs'
// readers so that outputs close together read the device once (the
// ledger package's DefaultReadCacheBytes; a server test keeps them equal).
const LedgerReadCacheBytes = 32 << 20

// LedgerReadCache is the read cache the ledger keeps for c:
// LedgerReadCacheBytes with more than one enabled output, none with one.
// A lone output has no other reader to share its reads with, and copying
// every window through a cache would only slow its drain.
func (c *Config) LedgerReadCache() int64 {
	if len(c.Outputs()) > 1 {
		return LedgerReadCacheBytes
	}
	return 0
}

// LedgerReadWindowBytes is one ledger reader's read window: each output
// reads the ledger through its own.
const LedgerReadWindowBytes = 1 << 20

// InputCompressionBytes is what the input's record compressors hold
// with ledger.compression = "zstd" or "s2" (0 with "none") on a machine where
// logpond runs cpus goroutines at once (GOMAXPROCS): the input compresses
// each record before the journal, with one compressor per CPU shared by
// the connections (input.CompressorCount; more could never run at once).
// Each holds its encoder, record.CompressorMemory of the codec and level, and the
// largest record it compressed, 2 × journal.max_group_bytes (the input's
// records are at most that, see JournalReadBytes).
func (c *Config) InputCompressionBytes(cpus int) int64 {
	rc := c.Ledger.RecordCompression()
	if !rc.Enabled() {
		return 0
	}
	return int64(max(cpus, 1)) * (int64(record.CompressorMemory(rc)) + 2*int64(c.Journal.MaxGroupBytes))
}

// LedgerDecompressionBytes is what the outputs' ledger readers hold to
// decompress records: per enabled output, a decompressor,
// record.DecompressorMemory, and the buffer a record decompresses into,
// the largest record, 2 × journal.max_group_bytes. It counts whatever
// ledger.compression says: the setting decides how new records are
// stored, and a ledger written before it changed to "none" still holds
// compressed records, which the outputs decompress as they read them.
func (c *Config) LedgerDecompressionBytes() int64 {
	return int64(len(c.Outputs())) * (int64(record.DecompressorMemory) + 2*int64(c.Journal.MaxGroupBytes))
}

// RuntimeOverheadBytes is the fixed part of the formula.
const RuntimeOverheadBytes = 20 << 20

// JournalTailBytes is how much of its recent records the journal keeps in
// memory for the flusher: 8 × journal.max_group_bytes, at most
// journal.segment_bytes. The flusher is woken each time a quarter of it
// has filled, so it need not hold a whole flush_interval of records.
func (c *Config) JournalTailBytes() int64 {
	return min(8*int64(c.Journal.MaxGroupBytes), int64(c.Journal.SegmentBytes))
}

// JournalReadChunkBytes is the size of one read of a journal file (the
// journal's framelog.ReadChunk): its recovery scan at open, and the
// flusher's reads of its files, read a file this much at a time.
const JournalReadChunkBytes = 1 << 20

// JournalReadBytes is what a read of the journal's files holds: one
// chunk, or the largest record when that is larger (the input's records
// are at most 2 × journal.max_group_bytes, but for a record of one event
// larger than that, up to input.beats.max_event_bytes, which the formula
// leaves out as it leaves out such events everywhere: docs/operations.md,
// "Memory"). The journal's files are read
// one at a time: at open (and at the reopen of a failed journal, which
// the flusher runs) the journal verifies its newest segment, and the
// flusher reads them when it fell behind the in-memory tail.
func (c *Config) JournalReadBytes() int64 {
	return max(JournalReadChunkBytes, 2*int64(c.Journal.MaxGroupBytes))
}

// Memory returns the memory formula's parts for c on this machine: the
// input's compressors count one per CPU logpond runs on
// (runtime.GOMAXPROCS).
func (c *Config) Memory() Memory { return c.MemoryFor(runtime.GOMAXPROCS(0)) }

// MemoryFor is Memory on a machine where logpond runs cpus goroutines at
// once (GOMAXPROCS).
func (c *Config) MemoryFor(cpus int) Memory {
	b := c.Input.Beats
	m := Memory{
		Input:            int64(b.MaxInflightBytes),
		Connections:      int64(b.MaxConnections) * ConnectionBytes,
		InputCompression: c.InputCompressionBytes(cpus),
		JournalTail:      c.JournalTailBytes(),
		JournalWrite:     4 * int64(c.Journal.MaxGroupBytes),
		JournalRead:      c.JournalReadBytes(),
		Ledger:           LedgerBuffersBytes + c.LedgerReadCache() + c.LedgerDecompressionBytes(),
		Overhead:         RuntimeOverheadBytes,
	}
	outs := c.Outputs()
	for _, o := range outs {
		m.Output += c.OutputBytes(o)
	}
	m.Ledger += int64(max(len(outs)-1, 0)) * LedgerReadWindowBytes
	return m
}

// LumberjackEventBytes is what the formula assumes an event of a
// Lumberjack batch holds on average.
const LumberjackEventBytes = 2 << 10

// KafkaEventBytes is what the formula assumes a record of a Kafka batch
// holds on average: an event with its Beats metadata, as
// LumberjackEventBytes.
const KafkaEventBytes = 2 << 10

// KafkaChunkBytes is the least a Kafka output reads of the ledger at once
// in the formula: its chunk of records is the larger of this and the
// largest record (2 × journal.max_group_bytes).
const KafkaChunkBytes = 4 << 20

// OutputBytes is the memory formula's part for one output:
//   - Elasticsearch: ESChunkBytes for each of workers + 2 chunks of
//     records (one being filled, one queued, one per worker being turned
//     into requests), plus 9/2 × workers × flush_bytes: per worker, the
//     request being built or sent and one kept for reuse, each about
//     flush_bytes with its action lines (a quarter more), and the retry
//     queue, which holds at most workers × flush_bytes plus one request
//     per worker;
//   - Lumberjack: workers × number of hosts × 2 × max(bulk_max_size ×
//     LumberjackEventBytes, 2 × journal.max_group_bytes): per connection,
//     one batch waiting for its ACK and the next one being built. A batch
//     is counted at 2 KiB per event, a typical log event with its Beats
//     metadata: bulk_max_size × input.beats.max_event_bytes (16 MiB) would
//     be true only if every event of a batch were as large as the largest
//     one allowed, and would count gigabytes nobody sees. A batch is
//     counted as at least one record of the largest size the input writes
//     (2 × journal.max_group_bytes), as the output reads whole records;
//   - Kafka: 3 × bulk_max_size × KafkaEventBytes + max(KafkaChunkBytes,
//     2 × journal.max_group_bytes): the batch the client holds until the
//     brokers acknowledge it (one transaction with exactly_once), the
//     produce requests it is sent in (compressed, so at most as large),
//     and the next batch being built, each counted at 2 KiB per event as
//     for Lumberjack (bulk_max_size × max_event_bytes would count
//     gigabytes no real batch holds); plus the chunk of ledger records
//     the next batch is made from, at least 4 MiB and at least one
//     record of the largest size the input writes. 16 MiB at the
//     defaults.
//
// With processors (the global list or the output's), each goroutine that
// runs the chain adds ChainBytes: an Elasticsearch output's workers, a
// Kafka or Lumberjack output's reader.
func (c *Config) OutputBytes(o NamedOutput) int64 {
	if es := o.Elasticsearch; es != nil {
		w, flush := int64(es.Workers), int64(es.FlushBytes)
		return (w+2)*c.ESChunkBytes(es) + w*flush*9/2 + w*c.ChainBytes(o)
	}
	if kc := o.Kafka; kc != nil {
		return 3*int64(kc.BulkMaxSize)*KafkaEventBytes + max(KafkaChunkBytes, 2*int64(c.Journal.MaxGroupBytes)) + c.ChainBytes(o)
	}
	lj := o.Lumberjack
	if lj == nil {
		return 0
	}
	batch := max(int64(lj.BulkMaxSize)*LumberjackEventBytes, 2*int64(c.Journal.MaxGroupBytes))
	return int64(lj.Workers)*int64(len(lj.Hosts))*2*batch + c.ChainBytes(o)
}

// ChainRunnerBytes is what one goroutine running a processor chain holds
// in the formula: the parsed event's tree, the buffers its strings are
// decoded and its result serialized into, and the processors' scratch
// (dissect's fields, grok's captures), after events of up to 32 KiB. A
// larger event grows them while it is processed; the next event starts
// on fresh ones (output/processors, whose tests measure both).
const ChainRunnerBytes = 256 << 10

// GrokPatternBytes is what one grok pattern may hold per goroutine: the
// lazily built automaton that rules out the lines a pattern cannot match
// before its backtracker tries them. The automaton counts what it
// allocates and stops growing at this bound (output/processors, whose
// tests hold the two together).
const GrokPatternBytes = 1 << 20

// GrokRunBytes is what the grok processors of one goroutine's chain keep
// between events beside their automatons: the backtracker's memo of
// visited states and its stacks, kept at the size the longest line of
// up to about 50 KiB needed (output/processors, whose tests hold the two
// together), since allocating them anew for each long line costs it
// several times its match.
const GrokRunBytes = 3 << 20

// ChainBytes is what one goroutine running output o's chain (the global
// processors, then o's own) holds: ChainRunnerBytes, plus GrokRunBytes
// and GrokPatternBytes per grok pattern when it has grok processors; 0
// without processors.
func (c *Config) ChainBytes(o NamedOutput) int64 {
	own := o.Processors()
	if len(c.Processors) == 0 && len(own) == 0 {
		return 0
	}
	n := int64(ChainRunnerBytes)
	if patterns := int64(grokPatterns(c.Processors) + grokPatterns(own)); patterns > 0 {
		n += GrokRunBytes + patterns*GrokPatternBytes
	}
	return n
}

// grokPatterns counts the patterns of the grok processors in v (a list
// of processors as written, if/then/else lists included).
func grokPatterns(v any) int {
	n := 0
	switch x := v.(type) {
	case Processors:
		for _, el := range x {
			n += grokPatterns(el)
		}
	case []map[string]any:
		for _, el := range x {
			n += grokPatterns(el)
		}
	case []any:
		for _, el := range x {
			n += grokPatterns(el)
		}
	case map[string]any:
		for k, el := range x {
			if g, ok := el.(map[string]any); ok && k == "grok" {
				if m, ok := g["match"].(map[string]any); ok {
					for _, p := range m {
						if list, ok := p.([]any); ok {
							n += len(list)
						} else {
							n++
						}
					}
				}
				continue
			}
			n += grokPatterns(el)
		}
	}
	return n
}

// ESChunkBytes is the most one chunk of an Elasticsearch output's
// records holds: the output reads records into chunks of flush_bytes,
// except that a record larger than that is a chunk of its own, and
// records are up to 2 × journal.max_group_bytes (a record of one event
// may be larger, up to input.beats.max_event_bytes, which the formula
// leaves out as it does everywhere: docs/operations.md, "Memory").
func (c *Config) ESChunkBytes(es *Elasticsearch) int64 {
	return max(int64(es.FlushBytes), 2*int64(c.Journal.MaxGroupBytes))
}

// Total is the sum of the parts: about the most memory logpond uses with
// this configuration, whatever its backlog.
func (m Memory) Total() int64 {
	return m.Input + m.Connections + m.InputCompression + m.JournalTail + m.JournalWrite + m.JournalRead + m.Ledger + m.Output + m.Overhead
}
