package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFuzzSeeds regenerates testdata/fuzz/FuzzExamineTail from a real
// journal segment when LOGPOND_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("LOGPOND_WRITE_SEEDS") != "1" {
		t.Skip("set LOGPOND_WRITE_SEEDS=1 to regenerate the fuzz seeds")
	}
	f := buildFixture(t)
	data, _ := os.ReadFile(f.segment)
	out := filepath.Join("testdata", "fuzz", "FuzzExamineTail")
	os.MkdirAll(out, 0o755)
	write := func(name string, b []byte) {
		os.WriteFile(filepath.Join(out, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644)
	}
	clone := func() []byte { return append([]byte(nil), data...) }
	write("intact", data)
	write("torn-mid-last-group", data[:f.offsets[13]+10])
	write("zero-tail", append(clone(), make([]byte, 512)...))
	mid := clone()
	mid[f.offsets[5]+40] ^= 1
	write("flipped-middle", mid)
	last := clone()
	last[f.offsets[13]+30] ^= 0x40
	write("flipped-last-group", last)
	prefix := clone()
	prefix[f.offsets[5]] ^= 0x7f
	write("flipped-length-prefix", prefix)
}
