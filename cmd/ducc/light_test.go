package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The small ducc must stay small: every CLI call pays for the
// initialization of what it links (ARCHITECTURE.md, "Executables").
// What needs these packages belongs in duccd, behind cli.Daemon.
func TestLinksNoDaemonCode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{
		"github.com/libp2p/",
		"github.com/multiformats/",
		"github.com/prometheus/",
		"github.com/hashicorp/raft",
		"go.etcd.io/bbolt",
		"github.com/containerd/",
		"github.com/NVIDIA/go-nvml", // cgo, and only duccd discovers GPUs (ARCHITECTURE.md, gpu)
		"github.com/ducc-project/ducc/agent",
		"github.com/ducc-project/ducc/feed",
		"github.com/ducc-project/ducc/sim",
		"github.com/ducc-project/ducc/proc",
		"github.com/ducc-project/ducc/cgroup",
		"github.com/ducc-project/ducc/web",
		"github.com/ducc-project/ducc/wire/p2p",
		"github.com/ducc-project/ducc/head", // but head/rm, pure, for class files
		"net/http",                          // the socket client is cmd/internal/sockhttp
		"crypto/tls",                        // what net/http would bring
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %q", deps)
	}
	for _, p := range deps {
		if p == "github.com/ducc-project/ducc/head/rm" {
			continue
		}
		for _, f := range forbidden {
			if p == f || strings.HasPrefix(p, strings.TrimSuffix(f, "/")+"/") || (strings.HasSuffix(f, "/") && strings.HasPrefix(p, f)) {
				t.Errorf("cmd/ducc links %s (forbidden: %s); move what needs it behind cli.Daemon into duccd", p, f)
			}
		}
	}
}
