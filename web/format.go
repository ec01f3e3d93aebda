package web

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/ducc-project/ducc/units"
)

// funcs are the template helpers. They take the page's clock so output is
// deterministic in tests.
func funcs() template.FuncMap {
	return template.FuncMap{
		"bytes":  formatBytes,
		"plural": units.Plural,
		"ubytes": func(n uint64) string { return formatBytes(int64(n)) },
		"clock":  formatClock,
		"dur":    units.FormatDuration,
		"span":   span,
		"age":    age,
		"join":   strings.Join,
		"pct":    pct,
		"cmd":    func(c []string) string { return strings.Join(c, " ") },
		"lower":  strings.ToLower,
		"ms":     formatMS,
		"times":  func(start, end, now int64) timeSpan { return timeSpan{start, end, now} },
		"node":   nodeURL,
		"add":    func(a, b int) int { return a + b },
		// GPUs (gpus.go).
		"gpuRequest": gpuRequest,
		"procGPUs":   procGPUs,
		"gpuSummary": gpuSummary,
		"holderWork": holderWork,
		"gpuUtil":    gpuUtil,
	}
}

// timeSpan feeds the "since" template: a live duration.
type timeSpan struct{ Start, End, Now int64 }

// formatBytes prints binary sizes the way the CLI does (4 GiB, 512 MiB);
// nothing is "—".
func formatBytes(n int64) string {
	if n <= 0 {
		return "—"
	}
	return units.FormatSize(n)
}

// formatClock prints a unix-ms time in the server's zone; 0 is "—".
func formatClock(ms int64) string {
	if ms <= 0 {
		return "—"
	}
	return time.UnixMilli(ms).Format("2006-01-02 15:04:05")
}

// span is the time from start to end (or to now while running), all in
// unix ms; "—" when it never started.
func span(start, end, now int64) string {
	if start <= 0 {
		return "—"
	}
	if end <= 0 {
		end = now
	}
	return units.FormatDuration(time.Duration(end-start) * time.Millisecond)
}

// age is how long ago a unix-ms time was.
func age(ms, now int64) string {
	if ms <= 0 {
		return "never"
	}
	return units.FormatDuration(time.Duration(now-ms)*time.Millisecond) + " ago"
}

func pct(part, whole int64) int64 {
	if whole <= 0 {
		return 0
	}
	return part * 100 / whole
}

// formatMS prints milliseconds (int64 or float64) as a short duration.
func formatMS(v any) string {
	var f float64
	switch x := v.(type) {
	case int64:
		f = float64(x)
	case float64:
		f = x
	case int:
		f = float64(x)
	}
	switch {
	case f < 1000:
		return fmt.Sprintf("%.0f ms", f)
	case f < 60000:
		return fmt.Sprintf("%.1f s", f/1000)
	default:
		return units.FormatDuration(time.Duration(f) * time.Millisecond)
	}
}
