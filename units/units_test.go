package units

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"4G", 4 * GiB}, {"512M", 512 * MiB}, {"4GiB", 4 * GiB}, {"1.5G", 3 * GiB / 2}, {"2", 2 * GiB},
		{"4gb", 4 * GiB}, {"1T", TiB}, {"100K", 100 * KiB}, {"64B", 64}, {" 8 G ", 8 * GiB}, {"0", 0},
	} {
		got, err := ParseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "G", "-4G", "4X", "1.2.3G", "4 GiBs"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want string
	}{{4 * GiB, "4 GiB"}, {512 * MiB, "512 MiB"}, {3 * GiB / 2, "1.5 GiB"}, {0, "0 B"}, {100, "100 B"}, {2 * TiB, "2 TiB"},
		{1000, "1000 B"}, {2048, "2 KiB"}, {MiB + MiB/2, "1.5 MiB"}, {GiB + MiB, "1 GiB"}, {GiB + GiB/8, "1.1 GiB"}, {-MiB, "-1 MiB"}} {
		if got := FormatSize(tc.in); got != tc.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{-time.Second, "0s"}, {0, "0s"}, {250 * time.Millisecond, "250ms"}, {45 * time.Second, "45s"},
		{185 * time.Second, "3m05s"}, {2*time.Hour + 3*time.Minute, "2h03m"}, {76 * time.Hour, "3d04h"},
	} {
		if got := FormatDuration(tc.in); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseMinutesAndMillis(t *testing.T) {
	for _, tc := range []struct {
		parse func(string) (int64, error)
		in    string
		want  int64  // milliseconds
		err   string // substring of the error; "" = no error
	}{
		{ParseMinutes, "120", 7_200_000, ""},
		{ParseMinutes, "0.5", 30_000, ""},
		{ParseMinutes, " 90s ", 90_000, ""},
		{ParseMinutes, "1us", 1, ""},
		{ParseMinutes, "", 0, "is empty"},
		{ParseMinutes, "0", 0, "more than zero"},
		{ParseMinutes, "-1", 0, "more than zero"},
		{ParseMinutes, "soon", 0, "neither minutes"},
		{ParseMinutes, "NaN", 0, "not a number of minutes"},
		{ParseMinutes, "1e12", 0, "too large: at most 153722867 minutes"},
		{ParseMinutes, "153722868", 0, "too large: at most 153722867 minutes (about 292 years)"},
		{ParseMinutes, "153722867", 153722867 * 60_000, ""},
		{ParseMinutes, "1e400", 0, "too large"},
		{ParseMinutes, "-153722868", 0, "more than zero"},
		{ParseMinutes, "3000000h", 0, "too large"},
		{ParseMillis, "9223372036855", 0, "too large: at most 9223372036854 milliseconds"},
		{ParseMillis, "99999999999999999999", 0, "too large"},
		{ParseMillis, "9223372036854", 9223372036854, ""},
		{ParseMillis, "500", 500, ""},
		{ParseMillis, "10s", 10_000, ""},
		{ParseMillis, "1ns", 1, ""},
		{ParseMillis, "0", 0, "more than zero"},
		{ParseMillis, "-5s", 0, "neither milliseconds"},
		{ParseMillis, "x", 0, "neither milliseconds"},
	} {
		got, err := tc.parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// FuzzParseSize: no panic, and every accepted size formats and parses
// back to about the same number of bytes.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"4G", "512M", "1.5GiB", "2", "64B", " 8 g ", "1e3", ".", "9999999999T"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseSize(s)
		if err != nil {
			return
		}
		if b < 0 {
			t.Fatalf("ParseSize(%q) = %d: negative", s, b)
		}
		back, err := ParseSize(strings.ReplaceAll(FormatSize(b), " ", ""))
		if err != nil {
			t.Fatalf("FormatSize(%d) = %q does not parse: %v", b, FormatSize(b), err)
		}
		if d := back - b; d > b/10+1 || -d > b/10+1 {
			t.Fatalf("%q: %d bytes formats as %q, which reads back as %d", s, b, FormatSize(b), back)
		}
	})
}

func TestYAML(t *testing.T) {
	var v struct {
		Size Size     `yaml:"size"`
		Dur  Duration `yaml:"dur"`
	}
	if err := yaml.Unmarshal([]byte("size: 1.5G\ndur: 90s\n"), &v); err != nil {
		t.Fatal(err)
	}
	if v.Size.Bytes() != 3*GiB/2 || v.Dur.D() != 90*time.Second || v.Size.String() != "1.5 GiB" || v.Dur.String() != "1m30s" {
		t.Fatalf("got %v %v", v.Size, v.Dur)
	}
	out, err := yaml.Marshal(v)
	if err != nil || string(out) != "size: 1.5GiB\ndur: 1m30s\n" {
		t.Fatalf("marshal: %q %v", out, err)
	}
	for _, bad := range []string{"size: 4X\n", "size: [1]\n", "dur: soon\n", "dur: {a: 1}\n"} {
		if err := yaml.Unmarshal([]byte(bad), &v); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: error %v, want one naming line 1", bad, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "90s", want: 90 * time.Second},
		{in: " 1h30m ", want: 90 * time.Minute},
		{in: "30d", want: 30 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "0d", want: 0},
		{in: "d", bad: true},
		{in: "-1d", bad: true},
		{in: "1d-1h", bad: true},
		{in: "1dx", bad: true},
		{in: "3 days", bad: true},
		{in: "", bad: true},
	} {
		got, err := ParseDuration(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseDuration(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
