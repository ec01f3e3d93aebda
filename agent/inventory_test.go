package agent

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

func TestMemAvailable(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
		ok   bool
	}{
		{"kernel", "MemTotal:       24567808 kB\nMemFree:         1234 kB\nMemAvailable:   20000000 kB\nBuffers: 1 kB\n", 20000000 * 1024, true},
		{"last line without newline", "MemTotal: 1 kB\nMemAvailable: 7 kB", 7 * 1024, true},
		{"no unit", "MemAvailable: 4096\n", 4096, true},
		{"missing (before 3.14)", "MemTotal: 1 kB\nMemFree: 1 kB\n", 0, false},
		{"empty value", "MemAvailable:\n", 0, false},
		{"garbage", "MemAvailable: lots kB\n", 0, false},
		{"negative", "MemAvailable: -5 kB\n", 0, false},
		{"empty", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := memAvailable([]byte(tt.in))
			if got != tt.want || ok != tt.ok {
				t.Errorf("memAvailable(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func FuzzMemAvailable(f *testing.F) {
	f.Add([]byte("MemAvailable:   20000000 kB\n"))
	f.Add([]byte("MemAvailable:"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, ok := memAvailable(b); ok && v < 0 {
			t.Fatalf("negative %d", v)
		}
	})
}

// TestInventoryReadsThisNode checks the sample against /proc/meminfo read
// here: the same total, and used memory within what the total allows.
func TestInventoryReadsThisNode(t *testing.T) {
	inv := &inventory{reserved: 1 << 20}
	defer inv.close()
	var hb wire.Heartbeat
	for range 2 { // the second read is from the file kept open
		if err := inv.read(&hb); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Skip("no /proc/meminfo")
	}
	var total int64
	for _, l := range strings.Split(string(b), "\n") {
		var kb int64
		if n, _ := fmt.Sscanf(l, "MemTotal: %d kB", &kb); n == 1 {
			total = kb * 1024
		}
	}
	if hb.MemTotal != total {
		t.Errorf("MemTotal %d, /proc/meminfo says %d", hb.MemTotal, total)
	}
	if hb.MemUsed <= 0 || hb.MemUsed > hb.MemTotal {
		t.Errorf("MemUsed %d of %d", hb.MemUsed, hb.MemTotal)
	}
	if hb.MemSchedulable != total-1<<20 {
		t.Errorf("MemSchedulable %d, want total less reserved %d", hb.MemSchedulable, total-1<<20)
	}
	if hb.CPUs <= 0 || hb.SwapUsed < 0 || hb.SwapUsed > hb.SwapTotal || hb.Load1 < 0 {
		t.Errorf("sample %+v", hb)
	}
}
