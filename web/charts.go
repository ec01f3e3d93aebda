package web

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// Charts are server-rendered SVG (assets/layout.html, "chart"): no script
// and no inline style, so they pass the strict Content-Security-Policy.
// Their samples come from the head (wire.MethodCharts); the page adds the
// present value as the last point.

// chartW and chartH are the drawing area in SVG units; the chart scales
// to its box (CSS).
const (
	chartW = 600
	chartH = 150
)

// chart is one line chart.
type chart struct {
	ID, Title string
	Lines     []chartLine
	YMax      string   // the top of the y axis, formatted
	YTicks    []string // the y axis's labels, top to bottom (top, half, zero), with units
	From, To  string   // the first and last time
	W, H      int
	HalfH     int // the y of the half-way grid line
}

// chartLine is one series: its name, its SVG points and its last value.
type chartLine struct {
	Name, Last string
	Points     string // "x,y x,y ..." in the chart's units
	N          int
	X, Y       string // the last point
	Color      int    // 0..5: the line-N class of style.css
	Dashed     bool   // a bound (a job's total), not a measure
}

// chartSeries is one series before scaling: times (unix ms) and values.
type chartSeries struct {
	name   string
	dashed bool
	at     []int64
	v      []float64
}

// yScale is how a chart's values read: format prints a value (the keys
// and the axis labels), unit names what is counted on the top label
// ("items"; "" when format says it, as "4 GiB" does), and top rounds the
// largest value up to the top of the axis.
type yScale struct {
	format func(float64) string
	unit   string
	top    func(float64) float64
}

var (
	// itemScale counts work items.
	itemScale = yScale{format: formatCount, unit: "items", top: niceCeil}
	// shareScale counts shares.
	shareScale = yScale{format: formatCount, unit: "shares", top: niceCeil}
	// rateScale is items per second (the labels say "/s").
	rateScale = yScale{format: formatRate, top: niceCeil}
	// sizeScale is bytes.
	sizeScale = yScale{format: formatSize, top: niceSize}
)

// newChart scales series to one chart with a y axis from zero to a
// round top. It returns nil when no series has a point.
func newChart(id, title string, sc yScale, ss ...chartSeries) *chart {
	var t0, t1 int64
	ymax := 0.0
	any := false
	for _, s := range ss {
		for i, at := range s.at {
			if !any || at < t0 {
				t0 = at
			}
			if !any || at > t1 {
				t1 = at
			}
			any = true
			ymax = max(ymax, s.v[i])
		}
	}
	if !any {
		return nil
	}
	if ymax <= 0 {
		ymax = 1
	}
	ymax = sc.top(ymax)
	top := sc.format(ymax)
	if sc.unit != "" {
		top += " " + sc.unit
	}
	c := &chart{ID: id, Title: title, YMax: top, YTicks: []string{top, sc.format(ymax / 2), sc.format(0)}, W: chartW, H: chartH, HalfH: chartH / 2,
		From: time.UnixMilli(t0).Format("15:04:05"), To: time.UnixMilli(t1).Format("15:04:05")}
	span := float64(max(t1-t0, 1))
	for i, s := range ss {
		if len(s.at) == 0 {
			continue
		}
		var b strings.Builder
		var x, y float64
		for j, at := range s.at {
			x = float64(at-t0) / span * chartW
			if t1 == t0 {
				x = chartW // one time: a dot at the right
			}
			y = chartH - s.v[j]/ymax*chartH
			if j > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", x, y)
		}
		c.Lines = append(c.Lines, chartLine{Name: s.name, Last: sc.format(s.v[len(s.v)-1]), Points: b.String(), N: len(s.at), Color: i % 6, Dashed: s.dashed,
			X: strconv.FormatFloat(x, 'f', 1, 64), Y: strconv.FormatFloat(y, 'f', 1, 64)})
	}
	return c
}

// niceCeil is the smallest of 1, 2, 2.5, 4, 5, 6, 8 and 10 times a power
// of ten that is at least v (v > 0).
func niceCeil(v float64) float64 {
	e := math.Floor(math.Log10(v))
	// Below 1 divide by a power of ten: 4 × 0.1 is not 0.4 in floats.
	scale := func(m float64) float64 {
		if e >= 0 {
			return m * math.Pow(10, e)
		}
		return m / math.Pow(10, -e)
	}
	for _, m := range []float64{1, 2, 2.5, 4, 5, 6, 8} {
		if t := scale(m); t >= v*(1-1e-9) {
			return t
		}
	}
	return scale(10)
}

// niceSize rounds a size up to a round number of its binary unit (GiB,
// MiB, ...), so the labels read "8 GiB", "4 GiB".
func niceSize(v float64) float64 {
	for _, u := range []float64{1 << 40, 1 << 30, 1 << 20, 1 << 10} {
		if v >= u {
			return niceCeil(v/u) * u
		}
	}
	return niceCeil(v)
}

func formatCount(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
func formatRate(v float64) string  { return strconv.FormatFloat(v, 'f', 1, 64) + "/s" }
func formatSize(v float64) string {
	if v == 0 {
		return "0"
	}
	return formatBytes(int64(v))
}

// charts asks the head for its samples; a head that cannot answer
// (an older one) gives no charts, not a failed page.
func (f fetcher) charts(ctx context.Context, id uint64) (wire.ChartsReply, error) {
	var out wire.ChartsReply
	err := f.call(ctx, wire.Caller{}, wire.MethodCharts, wire.ChartsRequest{Work: id}, &out)
	return out, err
}

// jobCharts are a job's progress and items/s charts; w is the job as it
// is now, added as the last point.
func jobCharts(samples []wire.WorkSample, w wire.WorkInfo, now int64) (progress, rate *chart) {
	if w.Job == nil {
		return nil, nil
	}
	last := now
	if w.Ended {
		last = w.EndedAt
	}
	if n := len(samples); last > 0 && (n == 0 || last > samples[n-1].At) {
		samples = append(samples, wire.WorkSample{At: last, Done: w.Job.Done, Failed: w.Job.Failed, Total: w.Job.Total})
	}
	done := chartSeries{name: "done"}
	failed := chartSeries{name: "failed"}
	total := chartSeries{name: "total", dashed: true}
	items := chartSeries{name: "items/s"}
	for i, s := range samples {
		done.at, done.v = append(done.at, s.At), append(done.v, float64(s.Done))
		failed.at, failed.v = append(failed.at, s.At), append(failed.v, float64(s.Failed))
		total.at, total.v = append(total.at, s.At), append(total.v, float64(s.Total))
		if i > 0 {
			p := samples[i-1]
			if dt := float64(s.At-p.At) / 1000; dt > 0 {
				items.at = append(items.at, s.At)
				items.v = append(items.v, max(float64(s.Done+s.Failed-p.Done-p.Failed), 0)/dt)
			}
		}
	}
	progress = newChart("chart-progress", "Work items", itemScale, done, failed, total)
	rate = newChart("chart-rate", "Items per second", rateScale, items)
	return progress, rate
}

// classChart is the allocation over time of the classes that held
// shares in it.
func classChart(cs []wire.ClassSeries) *chart {
	var ss []chartSeries
	for _, c := range cs {
		s := chartSeries{name: c.Class}
		held := false
		for _, p := range c.Points {
			s.at, s.v = append(s.at, p.At), append(s.v, float64(p.Allocated))
			held = held || p.Allocated > 0
		}
		if held {
			ss = append(ss, s)
		}
	}
	return newChart("chart-classes", "Allocation by class", sizeScale, ss...)
}

// clusterChart is the shares used of the up nodes over time.
func clusterChart(cs []wire.ClusterSample) *chart {
	used := chartSeries{name: "shares used"}
	all := chartSeries{name: "shares"}
	for _, p := range cs {
		used.at, used.v = append(used.at, p.At), append(used.v, float64(p.SharesUsed))
		all.at, all.v = append(all.at, p.At), append(all.v, float64(p.Shares))
	}
	return newChart("chart-shares", "Shares used, all up nodes", shareScale, used, all)
}

// bar is one bar of a bar chart (node shares used).
type bar struct {
	Name, Href, Label string
	Y, W, Full        int // SVG units
}

// barChart is a horizontal bar chart: one bar per node, its shares used
// of its shares.
type barChart struct {
	ID, Title string
	Bars      []bar
	W, H      int
}

func nodeBars(nodes []wire.NodeInfo) *barChart {
	if len(nodes) == 0 {
		return nil
	}
	const row, label, width = 24, 110, 400
	most := 1
	for _, n := range nodes {
		most = max(most, n.Shares, n.SharesUsed)
	}
	b := &barChart{ID: "chart-nodes", Title: "Shares used per node", W: width, H: row * len(nodes)}
	for i, n := range nodes {
		scale := float64(width-label-70) / float64(most)
		b.Bars = append(b.Bars, bar{Name: n.Name, Href: nodeURL(n.Name), Label: fmt.Sprintf("%d / %d", n.SharesUsed, n.Shares),
			Y: i * row, W: int(float64(n.SharesUsed) * scale), Full: int(float64(n.Shares) * scale)})
	}
	return b
}
