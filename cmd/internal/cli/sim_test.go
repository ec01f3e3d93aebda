package cli

import (
	"strings"
	"testing"
)

func TestParseNodeGPUs(t *testing.T) {
	tests := []struct {
		in      string
		n       int
		mem     int64
		wantErr string
	}{
		{"", 0, 0, ""},
		{"0", 0, 0, ""},
		{"8x80G", 8, 80 << 30, ""},
		{"2X40g", 2, 40 << 30, ""},
		{"8", 0, 0, "count and a size"},
		{"x80G", 0, 0, "count and a size"},
		{"0x80G", 0, 0, "count and a size"},
		{"8xlots", 0, 0, "not a positive size"},
		{"8x0", 0, 0, "not a positive size"},
	}
	for _, tt := range tests {
		n, mem, err := parseNodeGPUs(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseNodeGPUs(%q) = %v, want an error with %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || n != tt.n || mem != tt.mem {
			t.Errorf("parseNodeGPUs(%q) = %d, %d, %v; want %d, %d", tt.in, n, mem, err, tt.n, tt.mem)
		}
	}
}
