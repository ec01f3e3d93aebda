package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ducc-project/ducc/proc"
	"github.com/ducc-project/ducc/wire"
)

type credKey struct{}

// serveAPI serves the local HTTP/JSON API on the Unix socket.
func (a *Agent) serveAPI(ctx context.Context) (*http.Server, error) {
	path := a.cfg.Socket
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create socket dir: %w", err)
	}
	// The data-dir lock guarantees no other agent owns this socket.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// Anyone may connect; the kernel tells us who they are.
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod socket: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+wire.PathRunAttach, a.apiAttach)
	mux.HandleFunc("GET "+wire.PathLogs, a.apiLogs)
	mux.HandleFunc("GET "+wire.PathID, a.apiID)
	mux.HandleFunc("POST "+wire.PathCall+"{method}", a.apiCall)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if uc, ok := c.(*net.UnixConn); ok {
				if cred, err := proc.PeerCred(uc); err == nil {
					return context.WithValue(ctx, credKey{}, cred)
				}
			}
			return ctx
		},
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("local API stopped", "err", err)
		}
	}()
	return srv, nil
}

// caller resolves who is calling: the kernel's uid, or --as for root.
func (a *Agent) caller(r *http.Request) (wire.Caller, error) {
	cred, _ := r.Context().Value(credKey{}).(*unix.Ucred)
	if cred == nil {
		return wire.Caller{}, wire.Errorf(wire.CodeUsage, "cannot tell who is calling (no peer credentials on the socket)")
	}
	var u *user.User
	var err error
	if as := r.Header.Get(wire.AsHeader); as != "" {
		if cred.Uid != 0 {
			return wire.Caller{}, wire.Errorf(wire.CodeUsage, "only root may act for another user (--as %s)", as)
		}
		if u, err = user.Lookup(as); err != nil {
			return wire.Caller{}, wire.Errorf(wire.CodeUsage, "--as %s: no such user", as)
		}
	} else if u, err = user.LookupId(strconv.Itoa(int(cred.Uid))); err != nil {
		return wire.Caller{UID: cred.Uid, GID: cred.Gid, User: "uid" + strconv.Itoa(int(cred.Uid)), Node: a.cfg.Node}, nil
	}
	return a.userCaller(u), nil
}

// userCaller is the caller of user u on this node: uid, gid, groups and
// home from the user database.
func (a *Agent) userCaller(u *user.User) wire.Caller {
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	c := wire.Caller{UID: uint32(uid), GID: uint32(gid), User: u.Username, Home: u.HomeDir, Node: a.cfg.Node}
	if gids, err := u.GroupIds(); err == nil {
		for _, g := range gids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				c.Groups = append(c.Groups, uint32(n))
			}
		}
	}
	return c
}

// maxAPIBody bounds a local API request.
const maxAPIBody = 16 << 20

// apiCall forwards one CLI call to the head.
func (a *Agent) apiCall(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	m, ok := wire.LookupMethod(method)
	if !ok || !m.OnSocket() {
		writeErr(w, wire.Errorf(wire.CodeUsage, "unknown API method %q", method))
		return
	}
	c, err := a.caller(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	req, resp := m.NewRequest(), m.NewReply()
	if err := decodeJSON(r, req); err != nil {
		writeErr(w, err)
		return
	}
	a.awaitNodeKnown(r.Context())
	if err := a.callHead(r.Context(), method, c, req, resp); err != nil {
		writeErr(w, err)
		return
	}
	if method == wire.MethodStatus {
		resp.(*wire.StatusInfo).Agent = a.cfg.Node
		resp.(*wire.StatusInfo).Cluster = a.cfg.Cluster
	}
	writeJSON(w, http.StatusOK, resp)
}

// nodeKnownWait bounds how long a local API call waits for the head to
// know this node (awaitNodeKnown).
const nodeKnownWait = 10 * time.Second

// awaitNodeKnown holds a call from this node's users until the head this
// agent follows knows the node (leaderTracker.knows): a head that has not
// yet folded in the node's first heartbeat would judge the call against a
// cluster without it. In a cluster's first moments a fresh dev cluster's
// head knows no node at all, and would accept work no node can hold (it
// would wait for ever, NoNodes) where a second later it refuses it; and
// the first head of a new incarnation would not yet know the leftovers
// of the earlier cluster whose work ids it must not give again
// (head.raiseIDFloor). Submitting to a starting cluster thus meets the
// cluster a person meets seconds later (docs/decisions.md, "The local
// agent answers once the head knows its node").
//
// The wait is bounded: at most nodeKnownWait, and noHeadWait while no
// head is known at all (callHead then says so). After that the call goes
// on and the head answers with what it knows.
func (a *Agent) awaitNodeKnown(ctx context.Context) {
	known, ch := a.leader.knows()
	if known {
		return
	}
	start := time.Now()
	limit := time.NewTimer(nodeKnownWait)
	defer limit.Stop()
	noHead := time.NewTimer(noHeadWait)
	defer noHead.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-limit.C:
			a.log.Info("the head has not acknowledged this node's heartbeat yet; the call goes on", "waited", time.Since(start).Round(time.Millisecond))
			return
		case <-noHead.C:
			if leader, _ := a.leader.get(); leader == "" {
				return // no head: callHead waits for one and says so
			}
		case <-ch:
		}
		if known, ch = a.leader.knows(); known {
			return
		}
	}
}

func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxAPIBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return wire.Errorf(wire.CodeUsage, "bad request body: %v", err)
	}
	return nil
}

func writeErr(w http.ResponseWriter, err error) {
	code := wire.ErrorCode(err)
	status := http.StatusInternalServerError
	switch code {
	case wire.CodeUsage:
		status = http.StatusBadRequest
	case wire.CodeUnreachable:
		status = http.StatusServiceUnavailable
	}
	if code == wire.CodeOK {
		code = wire.CodeError
	}
	writeJSON(w, status, wire.APIError{Error: err.Error(), Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (a *Agent) apiID(w http.ResponseWriter, _ *http.Request) {
	info := wire.IDInfo{Cluster: a.cfg.Cluster, Node: a.cfg.Node, PeerID: a.host.ID().String(), HeadEligible: a.cfg.Head}
	for _, ma := range a.host.Addrs() {
		info.Addrs = append(info.Addrs, ma.String()+"/p2p/"+info.PeerID)
	}
	if a.server != nil {
		info.Raft = a.server.RaftState()
	}
	if leader, _ := a.leader.get(); leader != "" {
		info.Head = leader.String()
	}
	if err := a.joiner.err(); err != nil {
		info.JoinError = err.Error()
	}
	writeJSON(w, http.StatusOK, info)
}
