package packaging

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ducc-project/ducc/agent"
)

// The shipped /etc/ducc/ducc.yaml must load with the agent's strict parser
// and mean what its comments say.
func TestShippedConfigParses(t *testing.T) {
	data, err := os.ReadFile("ducc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := agent.ParseConfig(data)
	if err != nil {
		t.Fatalf("agent.ParseConfig(ducc.yaml): %v", err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"node.data_dir", c.DataDir, "/var/lib/ducc"},
		{"cluster.key_file", c.ClusterKeyFile, "/etc/ducc/cluster.key"},
		{"node.socket", c.Socket, "/run/ducc/ducc.sock"},
		{"web.listen", c.Web.Listen, "127.0.0.1:42133"},
		{"web.private", c.Web.Private, true},
		{"head.eligible", c.Head, true},
		{"head.bootstrap_expect", c.BootstrapExpect, 1},
		{"node.heartbeat", c.Heartbeat.D(), time.Second},
		{"head.node_timeout", c.NodeTimeout.D(), 10 * time.Second},
		{"node.memory_reserved", c.MemoryReserved.Bytes(), int64(2 << 30)},
		{"cluster.name", c.Cluster, "ducc"},
		{"join", len(c.Join), 0},
		{"scheduler defaults", c.Scheduler != nil, true},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// The unit must keep work alive across agent restarts and find the config.
func TestUnitFile(t *testing.T) {
	data, err := os.ReadFile("ducc-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(data)
	for _, want := range []string{
		"KillMode=process", "Restart=on-failure", "ExecStart=/usr/bin/duccd agent --config /etc/ducc/ducc.yaml",
		"RuntimeDirectory=ducc", "WantedBy=multi-user.target",
	} {
		if !strings.Contains(unit, want+"\n") {
			t.Errorf("ducc-agent.service lacks %q", want)
		}
	}
	if strings.Contains(unit, "KillMode=control-group") || strings.Contains(unit, "KillMode=mixed") {
		t.Error("ducc-agent.service must not kill the job processes")
	}
}

// The install scripts must never start the agent unconditionally.
func TestScriptsNeedClusterKey(t *testing.T) {
	data, err := os.ReadFile("scripts/postinstall.sh")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	keyCheck := strings.Index(s, "if [ -f \"$key\" ]")
	start := strings.Index(s, "systemctl enable --now")
	if keyCheck < 0 || start < 0 || start < keyCheck {
		t.Errorf("postinstall.sh must start the agent only inside the cluster-key check")
	}
}
