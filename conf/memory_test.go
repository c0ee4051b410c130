package conf

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/logpond/logpond/record"
)

// docCPUs is the CPU count docs/operations.md states the default total
// for: the input's compressors count one per CPU.
const docCPUs = 4

// TestMemoryFormulaIsDocumented checks the formula's parts against the
// keys they name and its default total on docCPUs CPUs against
// docs/operations.md, and keeps that total within 256 MiB.
func TestMemoryFormulaIsDocumented(t *testing.T) {
	c := Default()
	m := c.MemoryFor(docCPUs)
	if m.Input != 48<<20 || m.Connections != 1000*80<<10 || m.JournalTail != 16<<20 || m.JournalWrite != 8<<20 || m.JournalRead != 4<<20 || m.Output != 42<<20 {
		t.Errorf("default parts: %+v", m)
	}
	if m.Total() > 256<<20 {
		t.Errorf("the defaults' formula is %d MiB on %d CPUs, above 256 MiB", m.Total()>>20, docCPUs)
	}
	data, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("| **memory** | the sum | **%d MiB** on %d CPUs |", m.Total()>>20, docCPUs); !strings.Contains(string(data), want) {
		t.Errorf("docs/operations.md lacks %q", want)
	}
	perCPU := c.InputCompressionBytes(1)
	if want := fmt.Sprintf("| %g MiB per CPU: %d MiB on %d |", float64(perCPU)/(1<<20), m.InputCompression>>20, docCPUs); !strings.Contains(string(data), want) {
		t.Errorf("docs/operations.md lacks %q (the input's compressors)", want)
	}
	// The compressors' row states record's bounds, codec by codec and
	// level by level.
	for _, codec := range []func(record.Level) record.Compression{record.S2, record.Zstd} {
		var levels []string
		for l := record.LevelFastest; l <= record.LevelBest; l++ {
			levels = append(levels, fmt.Sprintf("%g MiB at `%s`", float64(record.CompressorMemory(codec(l)))/(1<<20), l))
		}
		if want := codec(0).Codec.String() + ": " + strings.Join(levels, ", "); !strings.Contains(string(data), want) {
			t.Errorf("docs/operations.md lacks %q (record.CompressorMemory)", want)
		}
	}
	if want := fmt.Sprintf("(%d KiB + 2 × `journal.max_group_bytes`) per enabled output", record.DecompressorMemory>>10); !strings.Contains(string(data), want) {
		t.Errorf("docs/operations.md lacks %q (record.DecompressorMemory)", want)
	}
	c.Output.Elasticsearch.Enabled = false
	reader := int64(record.DecompressorMemory) + 2*int64(c.Journal.MaxGroupBytes) // the output's decompressor and record buffer
	if got := c.MemoryFor(docCPUs); got.Output != 0 || got.Total() != m.Total()-m.Output-reader {
		t.Errorf("output disabled: %+v", got)
	}
	c.Journal.SegmentBytes = 4 << 20
	if got := c.Memory().JournalTail; got != 4<<20 {
		t.Errorf("the journal's tail is %d with segment_bytes 4MiB, want at most the segment", got)
	}
	c.Journal.MaxGroupBytes = 256 << 10
	if got := c.Memory().JournalRead; got != JournalReadChunkBytes {
		t.Errorf("the journal's reads hold %d with max_group_bytes 256KiB, want one read chunk (records are smaller)", got)
	}
}

// TestMemoryOfCompression: with ledger.compression = "zstd" the input
// holds one compressor per CPU at its level, each with the largest
// record (2 × journal.max_group_bytes), and the ledger's part a
// decompressor and a record buffer per enabled output. "none" holds no
// compressor, but still a decompressor per output: a ledger written before
// the change holds compressed records. Memory counts this machine's
// GOMAXPROCS.
func TestMemoryOfCompression(t *testing.T) {
	c := Default()
	c.Journal.MaxGroupBytes = 1 << 20
	largest := int64(2 << 20)
	plain := c
	plain.Ledger.Compression = CompressionNone
	if got := plain.InputCompressionBytes(8); got != 0 {
		t.Errorf("compression none: the input's compressors hold %d bytes, want 0", got)
	}
	if got, want := plain.LedgerDecompressionBytes(), int64(record.DecompressorMemory)+largest; got != want {
		t.Errorf("compression none, one output: decompression %d bytes, want %d (the ledger may hold records compressed before the change)", got, want)
	}
	for _, level := range []record.Compression{
		record.Zstd(record.LevelFastest), record.Zstd(record.LevelDefault), record.Zstd(record.LevelBetter), record.Zstd(record.LevelBest),
		record.S2(record.LevelFastest), record.S2(record.LevelDefault), record.S2(record.LevelBest),
	} {
		c.Ledger.Compression, c.Ledger.CompressionLevel = level.Codec.String(), CompressionLevel(level.Level.String())
		for _, outputs := range []int{0, 1, 3} {
			c.Output.Elasticsearch.Enabled = outputs > 0
			c.Output.NamedElasticsearch = nil
			for i := 1; i < outputs; i++ {
				es := DefaultElasticsearch()
				if c.Output.NamedElasticsearch == nil {
					c.Output.NamedElasticsearch = map[string]*Elasticsearch{}
				}
				c.Output.NamedElasticsearch[string(rune('a'+i))] = &es
			}
			plain.Output = c.Output
			for _, cpus := range []int{1, 2, 16} {
				in := int64(cpus) * (int64(record.CompressorMemory(level)) + largest)
				out := int64(outputs) * (int64(record.DecompressorMemory) + largest)
				got, without := c.MemoryFor(cpus), plain.MemoryFor(cpus)
				if got.InputCompression != in || without.InputCompression != 0 {
					t.Errorf("%s, %d CPUs: the input's compressors hold %d, want %d", level, cpus, got.InputCompression, in)
				}
				// The readers' decompressors count with "none" too.
				if got.Ledger != without.Ledger || c.LedgerDecompressionBytes() != out {
					t.Errorf("%s, %d outputs: the ledger's part is %d (decompression %d), want %d as with none, decompression %d", level, outputs, got.Ledger, c.LedgerDecompressionBytes(), without.Ledger, out)
				}
				if got.Total() != without.Total()+in {
					t.Errorf("%s, %d outputs, %d CPUs: total %d, want %d more than with none (%d)", level, outputs, cpus, got.Total(), in, without.Total())
				}
			}
		}
	}
	if got, want := c.Memory(), c.MemoryFor(runtime.GOMAXPROCS(0)); got != want {
		t.Errorf("Memory %+v, want MemoryFor(GOMAXPROCS) %+v", got, want)
	}
}

// TestMemoryOfKafka: a Kafka output counts 3 batches of bulk_max_size
// events at 2 KiB each (the batch waiting for the brokers, its produce
// requests, the next one) and a chunk of ledger records, the larger of 4
// MiB and the largest record; an enabled one also adds its ledger reader
// to the ledger's part, and a disabled one counts nothing.
func TestMemoryOfKafka(t *testing.T) {
	c := Default()
	c.Output.Elasticsearch.Enabled = false
	events := DefaultKafka()
	events.Hosts, events.Topic = []string{"k1:9092"}, "logs"
	if got, want := c.OutputBytes(NamedOutput{Kafka: &events}), int64(16<<20); got != want {
		t.Errorf("a Kafka output at the defaults: %d bytes, want %d (3 × 2048 × 2 KiB + 4 MiB)", got, want)
	}
	small := events
	small.BulkMaxSize = 10
	c.Journal.MaxGroupBytes = 4 << 20
	if got, want := c.OutputBytes(NamedOutput{Kafka: &small}), int64(3*10*KafkaEventBytes+8<<20); got != want {
		t.Errorf("bulk_max_size 10, max_group_bytes 4MiB: %d bytes, want %d (a chunk holds the largest record, 8 MiB)", got, want)
	}
	c.Journal.MaxGroupBytes = Default().Journal.MaxGroupBytes
	base := c.MemoryFor(docCPUs)
	off := DefaultKafka()
	off.Enabled = false
	c.Output.Kafka = &events
	c.Output.NamedKafka = map[string]*Kafka{"small": &small, "off": &off}
	m := c.MemoryFor(docCPUs)
	if want := int64(16<<20) + 3*10*KafkaEventBytes + 4<<20; m.Output != want {
		t.Errorf("two enabled Kafka outputs: output part %d, want %d", m.Output, want)
	}
	reader := int64(record.DecompressorMemory) + 2*int64(c.Journal.MaxGroupBytes)
	if want := base.Ledger + 2*reader + LedgerReadCacheBytes + LedgerReadWindowBytes; m.Ledger != want {
		t.Errorf("two enabled Kafka outputs: ledger part %d, want %d (a reader each, a read window for the second, the shared cache)", m.Ledger, want)
	}
}

// A chain adds ChainRunnerBytes per goroutine that runs it, and with
// grok GrokRunBytes and GrokPatternBytes per grok pattern, to its
// output's part.
func TestMemoryCountsChains(t *testing.T) {
	doc := `
[[processors]]
[processors.grok.match]
message = ["%{COMBINEDAPACHELOG}", "%{COMMONAPACHELOG}"]
[output.elasticsearch.es]
hosts = ["http://127.0.0.1:9200"]
workers = 3
[output.kafka.k]
hosts = ["127.0.0.1:9092"]
topic = "t"
[[output.kafka.k.processors]]
if.has_fields = ["x"]
then = [{grok = {match = {x = "%{WORD:w}"}}}]
`
	with, err := Parse("with", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	without := *with
	without.Processors = nil
	kw := *without.Output.NamedKafka["k"]
	kw.Processors = nil
	without.Output.NamedKafka = map[string]*Kafka{"k": &kw}
	var es, k NamedOutput
	for _, o := range with.Outputs() {
		switch o.Name {
		case "es":
			es = o
		case "k":
			k = o
		}
	}
	if got, want := with.OutputBytes(es)-without.OutputBytes(es), int64(3*(ChainRunnerBytes+GrokRunBytes+2*GrokPatternBytes)); got != want {
		t.Errorf("elasticsearch: the chain adds %d, want %d", got, want)
	}
	var kOff NamedOutput
	for _, o := range without.Outputs() {
		if o.Name == "k" {
			kOff = o
		}
	}
	if got, want := with.OutputBytes(k)-without.OutputBytes(kOff), int64(ChainRunnerBytes+GrokRunBytes+3*GrokPatternBytes); got != want {
		t.Errorf("kafka: the chain adds %d, want %d", got, want)
	}
}
