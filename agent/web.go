package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ducc-project/ducc/web"
	"github.com/ducc-project/ducc/wire"
)

// Default web listen addresses: every interface in production, an
// ephemeral loopback port in dev mode (written to <data_dir>/web.url).
const (
	defaultWebListen    = ":42133"
	defaultDevWebListen = "127.0.0.1:0"
	webURLFile          = "web.url"
)

// agentObs is the agent's Prometheus registry with its own and the head's
// metrics. Both metric sets are nil-safe.
type agentObs struct {
	reg   *prometheus.Registry
	agent *web.AgentMetrics
	head  *web.HeadMetrics
}

func newAgentObs(version string) *agentObs {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ducc_build_info", Help: "Always 1; the version label is this agent's version.",
		ConstLabels: prometheus.Labels{"version": version},
	}, func() float64 { return 1 }))
	return &agentObs{reg: reg, agent: web.NewAgentMetrics(reg), head: web.NewHeadMetrics(reg)}
}

// headSource forwards dashboard calls to the head, for the user the
// dashboard identified (or anonymously: a caller without a user name).
type headSource struct{ a *Agent }

func (s headSource) Call(ctx context.Context, c wire.Caller, method string, req, resp any) error {
	c.Node = s.a.cfg.Node
	return s.a.callHead(ctx, method, c, req, resp)
}

// webLookupUser is the caller of the user a trusted proxy names
// (web.user_header), from this node's user database.
func (a *Agent) webLookupUser(name string) (wire.Caller, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return wire.Caller{}, fmt.Errorf("the proxy names user %q, unknown on node %s", name, a.cfg.Node)
	}
	return a.userCaller(u), nil
}

// webLookupUID is the caller of the user who owns a loopback connection
// to the dashboard (web.local_users), from this node's user database.
func (a *Agent) webLookupUID(uid uint32) (wire.Caller, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return wire.Caller{}, fmt.Errorf("uid %d owns the connection but is unknown on node %s", uid, a.cfg.Node)
	}
	return a.userCaller(u), nil
}

// webLog writes the log of a process of work id to w for the dashboard's
// identified user c: the head decides whether c may read it
// (MethodLogAccess), and the file is opened as for `ducc logs`, on this
// node or through the agent of the process's node.
func (a *Agent) webLog(ctx context.Context, c wire.Caller, id uint64, procID string, w io.Writer) error {
	c.Node = a.cfg.Node
	var acc wire.LogAccess
	if err := a.callHead(ctx, wire.MethodLogAccess, c, wire.IDRequest{ID: id}, &acc); err != nil {
		return err
	}
	p := pickProc(acc.Work, procID)
	if p == nil || p.LogPath == "" {
		what := fmt.Sprintf("work %d", id)
		if procID != "" {
			what = "process " + procID
		}
		return wire.Errorf(wire.CodeUsage, "%s has no log (yet)", what)
	}
	ev := &eventWriter{raw: w}
	if p.Node != a.cfg.Node {
		return a.tailRemote(ctx, ev, c, p, false)
	}
	return a.tailFile(ctx, ev, c, id, p.LogPath, acc, false)
}

// localProcs exports, at scrape time, the processes this agent manages
// by state.
type localProcs struct {
	a    *Agent
	desc *prometheus.Desc
}

func (c localProcs) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c localProcs) Collect(ch chan<- prometheus.Metric) {
	if c.a.procs == nil {
		return
	}
	by := map[string]int{}
	for _, st := range c.a.procs.List() {
		by[string(st.State)]++
	}
	for s, n := range by {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), s)
	}
}

// webListen is the address the dashboard listens on.
func (a *Agent) webListen() string {
	switch {
	case a.cfg.Web.Listen != "":
		return a.cfg.Web.Listen
	case a.cfg.Dev:
		return defaultDevWebListen
	default:
		return defaultWebListen
	}
}

// serveWeb starts the dashboard, the JSON API, /metrics and /healthz on
// web.listen. It logs the URL and writes it to <data_dir>/web.url.
func (a *Agent) serveWeb(ctx context.Context) (stop func(), err error) {
	obs := a.obs
	obs.reg.MustRegister(localProcs{a: a, desc: prometheus.NewDesc("ducc_agent_managed_processes",
		"Processes this agent manages, by state (read at scrape time).", []string{"state"}, nil)})

	addr := a.webListen()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("web dashboard: listen on %s (web.listen): %w", addr, err)
	}
	log := a.base.With("component", "web")
	proxies, err := a.cfg.Web.trustedProxies()
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	h := web.NewHandler(web.Config{
		Source: headSource{a: a}, Registry: obs.reg, Logger: a.base, Private: a.cfg.Web.Private,
		Version: a.version, Node: a.cfg.Node,
		TokenKey: a.webKey, UserHeader: a.cfg.Web.UserHeader, TrustedProxies: proxies,
		LookupUser: a.webLookupUser, Logs: a.webLog,
		LocalUsers: a.cfg.Web.localUsers(a.cfg.Dev), LookupUID: a.webLookupUID,
	})
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	url := webURL(ln.Addr())
	urlPath := filepath.Join(a.cfg.DataDir, webURLFile)
	if err := os.WriteFile(urlPath, []byte(url+"\n"), 0o644); err != nil {
		log.Warn("cannot record the dashboard URL", "file", urlPath, "err", err)
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("web dashboard stopped", "err", err)
		}
	}()
	log.Info("web dashboard ready", "url", url, "listen", ln.Addr().String(), "private", a.cfg.Web.Private,
		"local_users", a.cfg.Web.localUsers(a.cfg.Dev))
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
		}
		wg.Wait()
		_ = os.Remove(urlPath)
	}, nil
}

// webURL is a URL a browser on this node can open for addr.
func webURL(addr net.Addr) string {
	host, port := "127.0.0.1", ""
	if ta, ok := addr.(*net.TCPAddr); ok {
		port = strconv.Itoa(ta.Port)
		if !ta.IP.IsUnspecified() {
			host = ta.IP.String()
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
