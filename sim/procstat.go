package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// usage is a sample of this process's resource use.
type usage struct {
	at      time.Time
	cpu     time.Duration // user + system
	rss     int64         // bytes
	peakRSS int64         // bytes
	heap    uint64        // live heap bytes after the last GC
	gor     int
}

// sampleUsage reads this process's CPU time (getrusage), resident memory
// (/proc/self/status) and Go heap (runtime/metrics, no stop-the-world).
func sampleUsage() (usage, error) {
	u := usage{at: time.Now(), gor: runtime.NumGoroutine()}
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return u, fmt.Errorf("getrusage: %w", err)
	}
	u.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return u, fmt.Errorf("read memory use: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("VmRSS:")):
			u.rss = kbField(line)
		case bytes.HasPrefix(line, []byte("VmHWM:")):
			u.peakRSS = kbField(line)
		}
	}
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		u.heap = s[0].Value.Uint64()
	}
	return u, nil
}

// kbField parses "VmRSS:    1234 kB" into bytes.
func kbField(line []byte) int64 {
	f := bytes.Fields(line)
	if len(f) < 2 {
		return 0
	}
	n, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return n << 10
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
