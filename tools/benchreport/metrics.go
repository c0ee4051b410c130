package main

import (
	"fmt"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads logpond's /metrics and returns every sample's value by
// family name, summed over label sets (a histogram gives its _sum and
// _count under those suffixes).
func scrape(admin string) (map[string]float64, error) {
	fams, err := families(admin)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[name] += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[name] += m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[name+"_sum"] += m.GetHistogram().GetSampleSum()
				out[name+"_count"] += float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_UNTYPED:
				out[name] += m.GetUntyped().GetValue()
			}
		}
	}
	return out, nil
}

// families reads and parses logpond's /metrics.
func families(admin string) (map[string]*dto.MetricFamily, error) {
	c := http.Client{Timeout: 10 * time.Second}
	res, err := c.Get("http://" + admin + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", admin, err)
	}
	defer res.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: parse: %w", admin, err)
	}
	return fams, nil
}

// bucket is one cumulative bucket of a Prometheus histogram.
type bucket struct {
	le    float64 // upper bound
	count float64 // observations at most le
}

// hist is a histogram's cumulative buckets (ascending bounds, +Inf
// last), summed over its label sets.
type hist []bucket

// scrapeHists reads logpond's /metrics and returns the histograms named,
// each summed over its label sets; a histogram not exposed is absent.
func scrapeHists(admin string, names ...string) (map[string]hist, error) {
	fams, err := families(admin)
	if err != nil {
		return nil, err
	}
	out := map[string]hist{}
	for _, name := range names {
		f, ok := fams[name]
		if !ok || f.GetType() != dto.MetricType_HISTOGRAM {
			continue
		}
		var h hist
		for _, m := range f.GetMetric() {
			bs := m.GetHistogram().GetBucket()
			if h == nil {
				h = make(hist, len(bs)+1)
				for i, b := range bs {
					h[i].le = b.GetUpperBound()
				}
				h[len(bs)].le = math.Inf(1)
			}
			for i, b := range bs {
				if i < len(h)-1 {
					h[i].count += float64(b.GetCumulativeCount())
				}
			}
			h[len(h)-1].count += float64(m.GetHistogram().GetSampleCount())
		}
		out[name] = h
	}
	return out, nil
}

// since is h less an earlier scrape of the same histogram: what was
// observed in between. Without a usable earlier scrape it is h.
func (h hist) since(earlier hist) hist {
	if len(earlier) != len(h) {
		return h
	}
	d := make(hist, len(h))
	for i := range h {
		d[i] = bucket{le: h[i].le, count: h[i].count - earlier[i].count}
	}
	return d
}

// total is how many observations h holds.
func (h hist) total() float64 {
	if len(h) == 0 {
		return 0
	}
	return h[len(h)-1].count
}

// above is how many observations h holds above the smallest bound that is
// at least x: a count, not an estimate, when x is a bound.
func (h hist) above(x float64) float64 {
	for _, b := range h {
		if b.le >= x {
			return h.total() - b.count
		}
	}
	return 0
}

// quantile estimates the q-quantile of h as Prometheus's
// histogram_quantile does: linearly within the bucket it falls in (the
// highest finite bound when it falls in +Inf); 0 for an empty h.
func (h hist) quantile(q float64) float64 {
	n := h.total()
	if n == 0 {
		return 0
	}
	rank := q * n
	lower, below := 0.0, 0.0
	for i, b := range h {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				if i == 0 {
					return 0
				}
				return h[i-1].le
			}
			if b.count == below {
				return b.le
			}
			return lower + (b.le-lower)*(rank-below)/(b.count-below)
		}
		lower, below = b.le, b.count
	}
	return lower
}
