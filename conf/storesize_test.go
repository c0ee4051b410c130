package conf

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStoreSizeWarnings: stores configured larger than the file system
// they share are named, with the sizes; stores that fit are not. The
// directories need not exist yet.
func TestStoreSizeWarnings(t *testing.T) {
	root := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		t.Fatal(err)
	}
	total := Size(int64(st.Blocks) * st.Bsize)
	c := Default()
	c.Journal.Dir, c.Ledger.Dir = filepath.Join(root, "j", "journal"), filepath.Join(root, "l", "ledger")
	c.Journal.MaxBytes, c.Ledger.MaxBytes = 64<<20, 256<<20
	c.Output.Elasticsearch.DeadLetterMaxBytes = 128 << 20
	if total < 1<<30 {
		t.Skipf("the temporary directory's file system is only %s", total)
	}
	if ws := c.StoreSizeWarnings(); len(ws) != 0 {
		t.Errorf("stores that fit: %v", ws)
	}
	c.Ledger.MaxBytes = total // with the journal and the dead letters, more than the file system
	ws := c.StoreSizeWarnings()
	if len(ws) != 1 || ws[0].Key != "ledger.max_bytes" {
		t.Fatalf("warnings %v, want one of ledger.max_bytes", ws)
	}
	for _, want := range []string{"journal.max_bytes 64MiB", "ledger.max_bytes " + total.String(), "output.elasticsearch.dead_letter_max_bytes 128MiB", "more than the " + total.String() + " file system"} {
		if !strings.Contains(ws[0].Msg, want) {
			t.Errorf("the warning lacks %q: %s", want, ws[0].Msg)
		}
	}
}
