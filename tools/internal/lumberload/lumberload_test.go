package lumberload

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestEventIsValidJSONOfTheAskedSize: every event is one JSON object of
// exactly the asked size (beyond its header), and events differ.
func TestEventIsValidJSONOfTheAskedSize(t *testing.T) {
	seen := map[string]bool{}
	for _, size := range []int{10, 120, 256, 1024, 90 << 10} {
		for n := range 200 {
			ev := Event(size, n)
			var v struct {
				Message string `json:"message"`
				N       int    `json:"n"`
			}
			if err := json.Unmarshal(ev, &v); err != nil {
				t.Fatalf("Event(%d, %d) = %q: %v", size, n, ev, err)
			}
			if v.N != n {
				t.Fatalf("Event(%d, %d): n = %d", size, n, v.N)
			}
			if size >= 120 && len(ev) != size {
				t.Fatalf("Event(%d, %d) has %d bytes", size, n, len(ev))
			}
			seen[v.Message] = true
		}
	}
	if len(seen) < 800 {
		t.Fatalf("only %d distinct messages in 1000 events", len(seen))
	}
}

// TestPercentileIsNearestRank: p of n sorted values is the smallest with
// at least p·n values at or below it — p99 of 100 values is not the
// largest.
func TestPercentileIsNearestRank(t *testing.T) {
	var xs []time.Duration
	for i := 1; i <= 100; i++ {
		xs = append(xs, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50}, {0.99, 99}, {0.999, 100}, {0, 1}, {1, 100}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("Percentile(1..100, %v) = %d, want %d", c.p, got, c.want)
		}
	}
	if Percentile(nil, 0.5) != 0 {
		t.Error("Percentile of nothing is not 0")
	}
}

// TestProcessStat: this process is running and has used some CPU; a
// process that does not exist is not running.
func TestProcessStat(t *testing.T) {
	pid := os.Getpid()
	for range 1_000_000 { // burn a little CPU to be measurable
		_ = Event(16, 1)
	}
	if !Running(pid) || ProcessCPU(pid) <= 0 {
		t.Fatalf("Running %v, CPU %s for this process", Running(pid), ProcessCPU(pid))
	}
	if Running(1 << 30) {
		t.Fatal("a nonexistent pid is running")
	}
}
