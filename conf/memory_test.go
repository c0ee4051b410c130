package conf

import (
	"fmt"
	"os"
	"strings"
	"testing"
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
	c.Output.Elasticsearch.Enabled = false
	if got := c.Memory(); got.Output != 0 || got.Total() != m.Total()-m.Output {
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
