package main

import (
	"fmt"
	"image/color"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/logpond/logpond/tools/internal/lumberload"
)

// plotWindow is the width of the windows whose p99 the plot shows.
const plotWindow = 500 * time.Millisecond

// windowP99 returns (window middle in seconds, p99 in ms) for each window
// of a timeline that holds at least one acknowledgement.
func windowP99(tl []lumberload.Sample) plotter.XYs {
	buckets := map[int][]time.Duration{}
	for _, s := range tl {
		i := int(s.At / plotWindow)
		buckets[i] = append(buckets[i], s.Latency)
	}
	keys := make([]int, 0, len(buckets))
	for k := range buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	xys := make(plotter.XYs, 0, len(keys))
	for _, k := range keys {
		l := buckets[k]
		slices.Sort(l)
		p99 := lumberload.Percentile(l, 0.99)
		xys = append(xys, plotter.XY{
			X: (float64(k) + 0.5) * plotWindow.Seconds(),
			Y: max(float64(p99)/float64(time.Millisecond), 0.01), // the log scale needs > 0
		})
	}
	return xys
}

var phaseColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 255},
}

// writePlot draws the p99 ack latency over time of each isolation phase
// into a PNG.
func writePlot(path string, rate float64, phases []isoPhase) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("logpond ack latency at %.0f events/s: p99 per %.1f s", rate, plotWindow.Seconds())
	p.X.Label.Text = "seconds since the load started"
	p.Y.Label.Text = "ack latency p99 (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	top := 0.0
	for i, ph := range phases {
		xys := windowP99(ph.Result.Timeline)
		if len(xys) == 0 {
			continue
		}
		for _, xy := range xys {
			top = max(top, xy.Y)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = phaseColors[i%len(phaseColors)]
		l.Width = vg.Points(1.5)
		if i > 0 {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(2 * float64(i))}
		}
		pts, err := plotter.NewScatter(xys)
		if err != nil {
			return err
		}
		pts.Color = l.Color
		pts.Shape = draw.CircleGlyph{}
		pts.Radius = vg.Points(1.5)
		p.Add(l, pts)
		p.Legend.Add(ph.Name+": "+ph.What, l)
	}
	// Headroom above the highest point for the legend.
	p.Y.Max = top * 8
	return p.Save(9*vg.Inch, 4.5*vg.Inch, path)
}
