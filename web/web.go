package web

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ducc-project/ducc/wire"
)

// Config configures the dashboard handler.
type Config struct {
	// Source answers the head's RPCs (required).
	Source Source
	// Registry is served at /metrics; NewHandler adds the cluster
	// collector to it. Nil: /metrics serves only the cluster collector.
	Registry *prometheus.Registry
	// Logger; component=web is added.
	Logger *slog.Logger
	// Private (web.private) serves pages and the JSON API to loopback
	// clients and TrustedProxies only, and identifies users (TokenKey,
	// UserHeader); /metrics and /healthz stay open.
	Private bool
	// TokenKey checks dashboard tokens (wire.WebTokenKey of the cluster
	// key); nil: no token is accepted.
	TokenKey []byte
	// UserHeader (web.user_header, e.g. X-Forwarded-User) names the user
	// an authenticating reverse proxy vouches for; honoured only on
	// requests from TrustedProxies. Empty: no header is honoured.
	UserHeader string
	// TrustedProxies (web.trusted_proxies) are the addresses of the
	// reverse proxies allowed to reach a private dashboard and to name the
	// user in UserHeader.
	TrustedProxies []netip.Prefix
	// LookupUser turns the user name of UserHeader into a caller (uid,
	// gid, groups) from this node's user database.
	LookupUser func(name string) (wire.Caller, error)
	// LocalUsers (web.local_users; on in dev mode) identifies a client
	// on loopback by the user who owns its connection, as the kernel's
	// socket tables say (localuser.go): a browser on the node is its
	// user, with no token, the way the agent's socket knows a `ducc`
	// command. A token or a trusted proxy's header still comes first.
	LocalUsers bool
	// LookupUID turns the uid that owns a loopback connection into a
	// caller from this node's user database (LocalUsers).
	LookupUID func(uid uint32) (wire.Caller, error)
	// Logs, if set, writes the log of process proc (empty: the first) of
	// work id to w, for c (an identified user); it refuses before writing
	// anything when c may not read it.
	Logs func(ctx context.Context, c wire.Caller, id uint64, proc string, w io.Writer) error
	// Version of this agent, shown in the footer and on the cluster page.
	Version string
	// Node is this agent's node name (the ducc_is_head metric and the
	// footer).
	Node string
	// LogURL, if set, links a process's log; empty result: no link. By
	// default the page shows the log path and the `ducc logs` command.
	LogURL func(w wire.WorkInfo, p wire.ProcInfo) string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// server is the dashboard; it holds no mutable state.
type server struct {
	cfg   Config
	log   *slog.Logger
	data  fetcher
	pages *pageSet
}

// NewHandler returns the dashboard, JSON API, /metrics and /healthz.
func NewHandler(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &server{cfg: cfg, log: cfg.Logger.With("component", "web"), data: fetcher{src: cfg.Source}, pages: mustPages()}

	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if err := reg.Register(NewClusterCollector(cfg.Source, cfg.Node)); err != nil {
		s.log.Warn("cluster metrics not registered", "err", err)
	}

	mux := http.NewServeMux()
	read := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, s.guard(h)) }
	for _, p := range s.pages.routes {
		read("GET "+p.path, s.page(p))
	}
	read("GET /static/", http.FileServerFS(staticFS()).ServeHTTP)
	read("GET /api/v1/jobs", s.apiJobs)
	read("GET /api/v1/jobs/{id}", s.apiShow)
	read("GET /api/v1/nodes", s.apiNodes)
	read("GET /api/v1/status", s.apiStatus)
	read("GET /api/v1/classes", s.apiClasses)
	read("GET /api/v1/services", s.apiServices)
	read("GET /api/v1/jobs/{id}/results", s.apiResults)
	read("GET /jobs/{id}/log", s.procLog)
	read("POST /login", s.login)
	read("POST /logout", s.logout)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slogPromLogger{s.log}}))
	mux.HandleFunc("GET /healthz", s.healthz)
	return securityHeaders(mux)
}

// securityHeaders: read-only pages, no framing, no sniffing, scripts
// only from this origin.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
		h.ServeHTTP(w, r)
	})
}

// healthz answers 200 while this agent serves; with ?head=1 it also
// checks that the head answers (503 if not).
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"status": "ok", "version": s.cfg.Version, "node": s.cfg.Node}
	code := http.StatusOK
	if r.URL.Query().Get("head") != "" {
		st, err := s.data.status(r.Context())
		if err != nil {
			out["status"], out["error"] = "head unreachable", err.Error()
			code = http.StatusServiceUnavailable
		} else {
			out["head"] = st.Head
		}
	}
	writeJSON(w, code, out)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// slogPromLogger adapts slog to promhttp's error logger.
type slogPromLogger struct{ log *slog.Logger }

func (l slogPromLogger) Println(v ...any) { l.log.Warn("metrics", "err", v) }
