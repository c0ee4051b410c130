package conf

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/logpond/logpond/record"
)

// TestMemoryFormulaIsDocumented checks the formula's parts against the
// keys they name and its default total against docs/operations.md, which
// promises that the defaults run in 256 MiB.
func TestMemoryFormulaIsDocumented(t *testing.T) {
	c := Default()
	m := c.Memory()
	if m.Input != 48<<20 || m.Connections != 1000*80<<10 || m.JournalTail != 16<<20 || m.JournalWrite != 8<<20 || m.JournalRead != 4<<20 || m.Output != 16<<20 {
		t.Errorf("default parts: %+v", m)
	}
	if m.Total() > 256<<20 {
		t.Errorf("the defaults' formula is %d MiB, above 256 MiB", m.Total()>>20)
	}
	data, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("| **memory** | the sum | **%d MiB** |", m.Total()>>20); !strings.Contains(string(data), want) {
		t.Errorf("docs/operations.md lacks %q", want)
	}
	// The compressors' row states record's bounds, level by level.
	for _, l := range []record.Level{record.LevelFastest, record.LevelDefault, record.LevelBetter, record.LevelBest} {
		if want := fmt.Sprintf("%g MiB at `%s`", float64(record.CompressorMemory(l))/(1<<20), l); !strings.Contains(string(data), want) {
			t.Errorf("docs/operations.md lacks %q (record.CompressorMemory)", want)
		}
	}
	if want := fmt.Sprintf("+ (%d KiB + 2 × `journal.max_group_bytes`) per enabled output", record.DecompressorMemory>>10); !strings.Contains(string(data), want) {
		t.Errorf("docs/operations.md lacks %q (record.DecompressorMemory)", want)
	}
	c.Output.Elasticsearch.Enabled = false
	reader := int64(record.DecompressorMemory) + 2*int64(c.Journal.MaxGroupBytes) // the output's decompressor and record buffer
	if got := c.Memory(); got.Output != 0 || got.Total() != m.Total()-m.Output-reader {
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

// TestMemoryOfCompression: with ledger.compression = "zstd" the ledger's
// part holds the writer's compressor at its level and its output buffer,
// and per enabled output a decompressor and a record buffer, the largest
// record each (2 × journal.max_group_bytes); "none" holds none of them.
func TestMemoryOfCompression(t *testing.T) {
	c := Default()
	c.Journal.MaxGroupBytes = 1 << 20
	largest := int64(2 << 20)
	plain := c
	plain.Ledger.Compression = CompressionNone
	base := plain.Memory()
	if got := plain.LedgerCompressionBytes(); got != 0 {
		t.Errorf("compression none: %d bytes, want 0", got)
	}
	for _, level := range []record.Level{record.LevelFastest, record.LevelDefault, record.LevelBetter, record.LevelBest} {
		c.Ledger.CompressionLevel = CompressionLevel(level.String())
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
			want := int64(record.CompressorMemory(level)) + largest + int64(outputs)*(int64(record.DecompressorMemory)+largest)
			if got := c.LedgerCompressionBytes(); got != want {
				t.Errorf("%s, %d outputs: %d bytes, want %d", level, outputs, got, want)
			}
			if got, without := c.Memory(), plain.Memory(); got.Ledger != without.Ledger+want || got.Total() != without.Total()+want {
				t.Errorf("%s, %d outputs: the ledger's part is %d, want %d more than with none (%d)", level, outputs, got.Ledger, want, without.Ledger)
			}
		}
	}
	if base.Ledger != LedgerBuffersBytes {
		t.Errorf("one output, no compression: the ledger's part is %d, want %d", base.Ledger, LedgerBuffersBytes)
	}
}
