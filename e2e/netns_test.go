package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// The multi-node harness: every node is a network namespace joined to a
// bridge that lives in a namespace of its own, so the cluster's addresses
// (10.213.0.0/24) exist only inside the namespaces and no traffic leaves
// them. Each node runs the real agent binary with its own config, data dir
// and socket; the CLI talks to an agent through its socket (Unix sockets
// are files, reachable from any namespace).

// nsPrefix names every namespace the harness creates, so that leftovers of
// a killed run can be found and removed.
const nsPrefix = "ducce2e-"

// netCluster is a cluster of agents in network namespaces.
type netCluster struct {
	t     testing.TB
	dir   string
	key   string
	sw    string // the namespace holding the bridge
	nodes map[string]*nsNode
	order []string
	// heartbeat and nodeTimeout go into every node's config, and so do
	// headYAML's keys into its head section ("retention: {work: 2s}").
	heartbeat, nodeTimeout, headYAML string
}

// nsNode is one agent in its namespace.
type nsNode struct {
	agentProc
	c    *netCluster
	ns   string
	ip   string
	head bool
	cfg  string
}

// needNetns skips unless the harness can run: root, iproute2, not -short.
func needNetns(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("multi-node harness skipped in -short mode")
	}
	if !isRoot() {
		t.Skip("network namespaces need root")
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (iproute2, util-linux)", tool)
		}
	}
}

// ipCmd runs ip with args and fails the test on error.
func ipCmd(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// removeNamespaces kills every process in the harness's namespaces and
// deletes them: leftovers of an earlier, killed run included.
func removeNamespaces() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], nsPrefix) {
			continue
		}
		killNamespace(f[0])
		_ = exec.Command("ip", "netns", "del", f[0]).Run()
	}
}

// killNamespace kills every process in a namespace: a machine that dies.
func killNamespace(ns string) {
	for range 20 {
		out, _ := exec.Command("ip", "netns", "pids", ns).Output()
		pids := strings.Fields(string(out))
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if n, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// netnsLock serializes namespace clusters across processes: the
// namespaces and their addresses are machine-wide, and a second run that
// starts would sweep the first one's namespaces (removeNamespaces) and
// kill its agents.
const netnsLock = "/tmp/ducc-netns.lock"

// lockNamespaces takes netnsLock until the test ends, waiting for another
// run to finish.
func lockNamespaces(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(netnsLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("namespace lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("namespace lock %s: %v", netnsLock, err)
	}
	// Cleanups run last-in first-out: registered before the cluster's,
	// the lock is released after the namespaces are gone.
	t.Cleanup(func() { f.Close() })
}

// netNodeSpec describes one node to start.
type netNodeSpec struct {
	name string
	head bool
}

// startNetCluster builds the namespaces and starts one agent per node. The
// namespaces are removed when the test ends, whether it passed or not.
func startNetCluster(t testing.TB, extraYAML string, specs ...netNodeSpec) *netCluster {
	t.Helper()
	return startNetClusterTimed(t, "250ms", "3s", extraYAML, specs...)
}

// startNetClusterTimed is startNetCluster with the heartbeat period and
// node timeout given.
func startNetClusterTimed(t testing.TB, heartbeat, nodeTimeout, extraYAML string, specs ...netNodeSpec) *netCluster {
	t.Helper()
	return startNetClusterHead(t, heartbeat, nodeTimeout, "", extraYAML, specs...)
}

// startNetClusterHead is startNetClusterTimed with more keys of every
// node's head section.
func startNetClusterHead(t testing.TB, heartbeat, nodeTimeout, headYAML, extraYAML string, specs ...netNodeSpec) *netCluster {
	t.Helper()
	needNetns(t)
	lockNamespaces(t)
	removeNamespaces()
	dir := scratchDir(t)
	c := &netCluster{t: t, dir: dir, key: filepath.Join(dir, "cluster.key"), sw: nsPrefix + "sw", nodes: map[string]*nsNode{},
		heartbeat: heartbeat, nodeTimeout: nodeTimeout, headYAML: headYAML}
	t.Cleanup(c.destroy)
	if out, code := runKeygen(c.key); code != 0 {
		t.Fatalf("ducc keygen: %s", out)
	}
	ipCmd(t, "netns", "add", c.sw)
	ipCmd(t, "-n", c.sw, "link", "add", "br0", "type", "bridge")
	ipCmd(t, "-n", c.sw, "link", "set", "br0", "up")
	heads := 0
	for _, s := range specs {
		if s.head {
			heads++
		}
	}
	var join []string
	for i, s := range specs {
		n := c.addNode(s.name, i+11, s.head)
		if s.head {
			join = append(join, fmt.Sprintf("/ip4/%s/tcp/42134", n.ip))
		}
	}
	for _, name := range c.order {
		n := c.nodes[name]
		n.writeConfig(c.key, join, heads, extraYAML)
		n.start()
	}
	c.waitUp(len(specs), 30*time.Second)
	return c
}

// addNode creates a node's namespace, cabled to the bridge.
func (c *netCluster) addNode(name string, host int, head bool) *nsNode {
	t := c.t
	n := &nsNode{c: c, ns: nsPrefix + name, ip: fmt.Sprintf("10.213.0.%d", host), head: head}
	n.cfg = filepath.Join(c.dir, name, "ducc.yaml")
	n.agentProc = agentProc{
		t:       t,
		name:    name,
		dataDir: filepath.Join(c.dir, name, "data"),
		sock:    filepath.Join(c.dir, name, "ducc.sock"),
		logPath: filepath.Join(c.dir, name, "agent.log"),
		// nsenter enters only the network namespace; "ip netns exec"
		// would also remount /sys and hide the cgroup hierarchy from the
		// agent. nsenter execs the agent: killing it kills the agent.
		argv: []string{"nsenter", "--net=/run/netns/" + n.ns, "--", duccBin, "agent", "--config", n.cfg},
	}
	if err := os.MkdirAll(filepath.Dir(n.cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	ipCmd(t, "netns", "add", n.ns)
	port := "p" + name // the bridge side, named in the switch namespace
	ipCmd(t, "-n", c.sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", n.ns)
	ipCmd(t, "-n", c.sw, "link", "set", port, "master", "br0", "up")
	ipCmd(t, "-n", n.ns, "addr", "add", n.ip+"/24", "dev", "eth0")
	ipCmd(t, "-n", n.ns, "link", "set", "eth0", "up")
	ipCmd(t, "-n", n.ns, "link", "set", "lo", "up")
	c.nodes[name] = n
	c.order = append(c.order, name)
	return n
}

func (n *nsNode) writeConfig(key string, join []string, heads int, extra string) {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster: {name: e2e, key_file: %s}\n", key)
	fmt.Fprintf(&b, "node: {name: %s, listen: [/ip4/%s/tcp/42134], data_dir: %s, socket: %s, memory: 2G, heartbeat: %s}\n",
		n.name, n.ip, n.dataDir, n.sock, n.c.heartbeat)
	fmt.Fprintf(&b, "join: [%s]\n", strings.Join(join, ", "))
	more := ""
	if n.c.headYAML != "" {
		more = ", " + n.c.headYAML
	}
	if n.head {
		fmt.Fprintf(&b, "head: {eligible: true, bootstrap_expect: %d, node_timeout: %s%s}\n", heads, n.c.nodeTimeout, more)
	} else {
		fmt.Fprintf(&b, "head: {eligible: false, node_timeout: %s%s}\n", n.c.nodeTimeout, more)
	}
	b.WriteString("web: {listen: \"127.0.0.1:0\"}\n")
	b.WriteString(extra)
	if err := os.WriteFile(n.cfg, []byte(b.String()), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// destroy stops every agent, kills every process in the namespaces and
// removes them.
func (c *netCluster) destroy() {
	for _, name := range c.order {
		c.nodes[name].kill9()
	}
	if c.t.Failed() {
		keep, err := os.MkdirTemp("", "ducc-e2e-logs-")
		if err == nil {
			for _, name := range c.order {
				b, _ := os.ReadFile(c.nodes[name].logPath)
				_ = os.WriteFile(filepath.Join(keep, name+".log"), b, 0o644)
			}
			c.t.Logf("full agent logs kept in %s", keep)
		}
		for _, name := range c.order {
			c.t.Logf("---- agent log of %s (tail) ----\n%s", name, c.nodes[name].logTail())
		}
	}
	removeNamespaces()
	for _, name := range c.order {
		killLeftovers(c.nodes[name].dataDir)
	}
}

// waitUp waits until every node's agent sees a head that sees want nodes up.
func (c *netCluster) waitUp(want int, d time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		ok := true
		for _, name := range c.order {
			if !c.nodes[name].running() {
				continue
			}
			st, good := c.nodes[name].status()
			if !good || st.Head == "" || st.NodesUp != want {
				ok = false
				break
			}
		}
		if ok {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("the cluster did not come up with %d nodes in %s", want, d)
}

// headNode returns the node currently acting as head, as node via sees it.
func (c *netCluster) headNode(via *nsNode) *nsNode {
	c.t.Helper()
	st, ok := via.status()
	if !ok || c.nodes[st.Head] == nil {
		c.t.Fatalf("no head known to %s: %+v", via.name, st)
	}
	return c.nodes[st.Head]
}

// nodeState returns a node's state as the head sees it.
func (c *netCluster) nodeState(via *nsNode, name string) string {
	out, _, code := via.ducc("nodes", "--json")
	if code != 0 {
		return ""
	}
	var nl wire.NodeList
	if json.Unmarshal([]byte(out), &nl) != nil {
		return ""
	}
	for _, n := range nl.Nodes {
		if n.Name == name {
			return n.State
		}
	}
	return ""
}

// idInfo asks a node's agent for its identity and join state.
func (n *nsNode) idInfo() (wire.IDInfo, bool) {
	out, _, code := n.ducc("id", "--json")
	var info wire.IDInfo
	return info, code == 0 && json.Unmarshal([]byte(out), &info) == nil
}

func runKeygen(path string) (string, int) {
	cmd := exec.Command(duccBin, "keygen", path)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), 1
	}
	return out.String(), 0
}
