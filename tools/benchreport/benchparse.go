package main

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// benchLineRE is a result line of go test -bench: the benchmark's name
// (with -N when GOMAXPROCS is N > 1), its iterations, then value-unit
// pairs.
var benchLineRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// benchResults reads the result lines of go test -bench output: for each
// benchmark (sub-benchmarks by their full name, BenchmarkX/sub), the
// value of each unit on each of its lines, in order. Lines that are not
// results are skipped; a result line whose pairs do not parse is an
// error.
func benchResults(out string) (map[string][]map[string]float64, error) {
	got := map[string][]map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := benchLineRE.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("result line of %s: odd value-unit pairs: %q", m[1], sc.Text())
		}
		vals := map[string]float64{}
		for i := 0; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("result line of %s: %q: %w", m[1], f[i], err)
			}
			vals[f[i+1]] = v
		}
		got[m[1]] = append(got[m[1]], vals)
	}
	return got, sc.Err()
}

// benchMedians is the median of each of units over a benchmark's count
// result lines; every line must have every unit.
func benchMedians(lines []map[string]float64, name string, count int, units ...string) (map[string]float64, error) {
	if len(lines) != count {
		return nil, fmt.Errorf("%s: %d result lines, want %d", name, len(lines), count)
	}
	med := map[string]float64{}
	for _, unit := range units {
		xs := make([]float64, 0, len(lines))
		for _, l := range lines {
			v, ok := l[unit]
			if !ok {
				return nil, fmt.Errorf("a result line of %s has no %s", name, unit)
			}
			xs = append(xs, v)
		}
		med[unit] = median(xs)
	}
	return med, nil
}
