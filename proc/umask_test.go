package proc

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// processUmask reads the process umask without changing it.
func processUmask(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Error(err)
		return -1
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("Umask:")); ok {
			u, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 8, 32)
			if err != nil {
				t.Error(err)
			}
			return int(u)
		}
	}
	t.Skip("no Umask in /proc/self/status (Linux < 4.7)")
	return -1
}

// Every holder of a umaskLock sees the process umask it asked for for as
// long as it holds it, whatever the others ask for at once; all of them
// get it (no deadlock, no starvation); once none holds it, the umask is
// baseUmask again.
func TestUmaskLock(t *testing.T) {
	old := syscall.Umask(baseUmask)
	t.Cleanup(func() { syscall.Umask(old) })
	tests := []struct {
		name   string
		umasks []int // one goroutine each, several rounds
	}{
		{"all the default", []int{0o022, 0o022, 0o022, 0o022}},
		{"mixed", []int{0o022, 0o077, 0o022, 0o027, 0o022, 0o077}},
		{"all different", []int{0o002, 0o007, 0o027, 0o077, 0o277}},
		{"one other among many", []int{0o022, 0o022, 0o022, 0o022, 0o022, 0o022, 0o022, 0o077}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l umaskLock
			var wg sync.WaitGroup
			for _, u := range tc.umasks {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 200 {
						l.fork(u, func() {
							if got := processUmask(t); got != u {
								t.Errorf("held %#o, the process umask is %#o", u, got)
							}
						})
						_ = l.create(func() error {
							if got := processUmask(t); got != baseUmask {
								t.Errorf("created under %#o, want %#o", got, baseUmask)
							}
							return nil
						})
					}
				}()
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("holders still waiting after a minute")
			}
			if got := processUmask(t); got != baseUmask {
				t.Errorf("umask %#o with no holder, want %#o", got, baseUmask)
			}
		})
	}
}

func TestServerProcs(t *testing.T) {
	for _, c := range []struct{ cpus, want int }{
		{1, 1}, {2, 1}, {4, 1}, {7, 1}, {8, 2}, {12, 3}, {16, 4}, {64, maxLaunches},
	} {
		if got := serverProcs(c.cpus); got != c.want {
			t.Errorf("serverProcs(%d) = %d, want %d", c.cpus, got, c.want)
		}
	}
}
