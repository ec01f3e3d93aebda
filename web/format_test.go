package web

import (
	"testing"
	"time"

	"github.com/ducc-project/ducc/units"
)

func TestFormat(t *testing.T) {
	tests := []struct{ got, want string }{
		{formatBytes(0), "—"},
		{formatBytes(512), "512 B"},
		{formatBytes(4 << 30), "4 GiB"},
		{formatBytes(1536 << 20), "1.5 GiB"},
		{units.FormatDuration(45 * time.Second), "45s"},
		{units.FormatDuration(185 * time.Second), "3m05s"},
		{units.FormatDuration(2*time.Hour + 3*time.Minute), "2h03m"},
		{units.FormatDuration(76 * time.Hour), "3d04h"},
		{units.FormatDuration(-time.Second), "0s"},
		{span(0, 0, 5000), "—"},
		{span(1000, 0, 6000), "5s"},
		{span(1000, 3000, 60000), "2s"},
		{age(0, 1), "never"},
		{age(1000, 4000), "3s ago"},
		{formatClock(0), "—"},
	}
	for i, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%d: got %q, want %q", i, tc.got, tc.want)
		}
	}
}
