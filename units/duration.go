package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration that reads from YAML as a Go duration
// string ("3s", "100ms").
type Duration time.Duration

// D returns the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats the duration.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a duration must be a value like 3s or 100ms", n.Line)
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: bad duration %q: write it like 3s, 100ms, 2m or 30d", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// ParseDuration reads a Go duration ("90s", "1h30m") that may start with
// a number of days ("30d", "1d12h").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, 'd'); i > 0 {
		days, err := strconv.ParseUint(s[:i], 10, 16)
		if err != nil {
			return 0, fmt.Errorf("bad duration %q: write it like 30d, 1d12h or 90m", s)
		}
		d := time.Duration(days) * 24 * time.Hour
		if rest := s[i+1:]; rest != "" {
			r, err := time.ParseDuration(rest)
			if err != nil || r < 0 {
				return 0, fmt.Errorf("bad duration %q: write it like 30d, 1d12h or 90m", s)
			}
			d += r
		}
		return d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: write it like 3s, 100ms, 2m or 30d", s)
	}
	return d, nil
}

// MarshalYAML implements yaml.Marshaler.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// FormatDuration writes a duration compactly for humans: 250ms, 45s,
// 3m05s, 2h03m, 3d04h. Negative durations are 0s; from a second on, the
// seconds are truncated.
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	default:
		return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
	}
}

// MaxMillis is the longest time limit in milliseconds: the longest
// time.Duration, about 292 years.
const MaxMillis = math.MaxInt64 / int64(time.Millisecond)

// maxMinutes is MaxMillis in whole minutes (153,722,867).
const maxMinutes = math.MaxInt64 / int64(time.Minute)

// tooLong says that a time limit is over the longest one.
func tooLong(s, unit string, most int64) error {
	return fmt.Errorf("%q is too large: at most %d %s (about 292 years)", s, most, unit)
}

// ParseMinutes reads minutes, DUCC's unit for job time limits ("120",
// "0.5"), or a Go duration ("90s", "1h30m"), and returns milliseconds
// (at least 1). Zero and negative values are refused, and so are values
// over maxMinutes (a time.Duration would overflow).
func ParseMinutes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("is empty: give minutes, like 30, or a duration like 90s")
	}
	var d time.Duration
	if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case math.IsNaN(f) || (math.IsInf(f, 0) && err == nil):
			return 0, fmt.Errorf("%q is not a number of minutes", s)
		case f <= 0:
			return 0, fmt.Errorf("must be more than zero, got %q", s)
		case f*float64(time.Minute) >= math.MaxInt64:
			return 0, tooLong(s, "minutes", maxMinutes)
		}
		d = time.Duration(f * float64(time.Minute))
	} else if d, err = time.ParseDuration(s); err != nil {
		if strings.HasPrefix(s, "-") {
			return 0, fmt.Errorf("must be more than zero, got %q", s)
		}
		if durationOverflows(s) {
			return 0, tooLong(s, "minutes", maxMinutes)
		}
		return 0, fmt.Errorf("%q is neither minutes (like 30 or 0.5) nor a duration (like 90s or 2h)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be more than zero, got %q", s)
	}
	return max(d.Milliseconds(), 1), nil
}

// durationOverflows reports whether s is a well-formed Go duration too
// long for a time.Duration (time.ParseDuration says only "invalid"): the
// same text with every number made 1 parses.
func durationOverflows(s string) bool {
	var b strings.Builder
	digits, dots := false, 0
	for _, r := range s {
		if r >= '0' && r <= '9' || r == '.' {
			if !digits {
				b.WriteByte('1')
				dots = 0
			}
			if r == '.' {
				if dots++; dots > 1 {
					return false // not a number
				}
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(r)
	}
	_, err := time.ParseDuration(b.String())
	return err == nil
}

// ParseMillis reads milliseconds, DUCC's unit for service timings
// ("500"), or a Go duration ("10s"), and returns milliseconds (at least
// 1). Zero and negative values are refused, and so are values over
// MaxMillis.
func ParseMillis(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case n <= 0:
			return 0, fmt.Errorf("must be more than zero, got %q", s)
		case err != nil || n > MaxMillis:
			return 0, tooLong(s, "milliseconds", MaxMillis)
		}
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil && !strings.HasPrefix(s, "-") {
		if durationOverflows(s) {
			return 0, tooLong(s, "milliseconds", MaxMillis)
		}
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is neither milliseconds (like 500) nor a duration (like 10s)", s)
	}
	return max(d.Milliseconds(), 1), nil
}
