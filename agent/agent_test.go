package agent

import (
	"strings"
	"testing"
	"time"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		wantErr string
		check   func(t *testing.T, c *Config)
	}{
		{name: "empty gets defaults", yaml: "head: true\n", check: func(t *testing.T, c *Config) {
			if c.DataDir != "/var/lib/ducc" || c.Socket != "/run/ducc/ducc.sock" || c.Heartbeat.D() != time.Second || c.Scheduler == nil {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{name: "values", yaml: "node: n7\nhead: true\nmemory: 16G\nmemory_reserved: 2G\nheartbeat: 2s\n", check: func(t *testing.T, c *Config) {
			if c.Node != "n7" || !c.Head || c.BootstrapExpect != 1 || c.Memory.Bytes() != 16<<30 || c.MemoryReserved.Bytes() != 2<<30 || c.Heartbeat.D() != 2*time.Second {
				t.Errorf("parsed %+v", c)
			}
		}},
		{name: "unknown key", yaml: "head: true\nnodee: n1\n", wantErr: "field nodee not found"},
		{name: "bad size", yaml: "head: true\nmemory: 12X\n", wantErr: "12X"},
		{name: "scheduler section validated", yaml: "head: true\nscheduler:\n  classes:\n    - {name: a, policy: FAIR_SHARE, weight: 1, priority: 1}\n    - {name: a, policy: FAIR_SHARE, weight: 1, priority: 1}\n", wantErr: "scheduler"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestLockDataDir(t *testing.T) {
	dir := t.TempDir()
	f, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDataDir(dir); err == nil || !strings.Contains(err.Error(), "already running on data dir") {
		t.Errorf("second lock: %v", err)
	}
	f.Close()
	g, err := lockDataDir(dir)
	if err != nil {
		t.Errorf("lock after release: %v", err)
	}
	g.Close()
}

func TestWorkIDOf(t *testing.T) {
	for in, want := range map[string]uint64{"17.1": 17, "3.12": 3, "": 0, "x.1": 0} {
		if got := workIDOf(in); got != want {
			t.Errorf("workIDOf(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestDevConfig(t *testing.T) {
	c := DevConfig("/tmp/x")
	if !c.Dev || !c.Head || c.Socket != "/tmp/x/ducc.sock" || c.Listen[0] != "/ip4/127.0.0.1/tcp/0" {
		t.Errorf("dev config %+v", c)
	}
}

func TestCheckBuilt(t *testing.T) {
	for _, y := range []string{"head: true\nbootstrap_expect: 3\n", "head: false\n", "head: true\npeers: [/ip4/127.0.0.1/tcp/1]\n"} {
		c, err := ParseConfig([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.CheckBuilt(); err == nil || !strings.Contains(err.Error(), "not built yet") {
			t.Errorf("%q: %v", y, err)
		}
	}
	c, _ := ParseConfig([]byte("head: true\n"))
	if err := c.CheckBuilt(); err != nil {
		t.Errorf("one-node config refused: %v", err)
	}
}
