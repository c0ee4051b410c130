package main

import (
	"fmt"
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
