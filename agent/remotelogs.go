package agent

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// logName is the file name of a process log:
// <work id>-<TYPE>-<node>-<pid>.log (docs/operations.md).
var logName = regexp.MustCompile(`^([0-9]+)-(` + string(wire.ProcJob) + `|` + string(wire.ProcService) + `|` + string(wire.ProcPOP) + `|` + string(wire.ProcDriver) + `)-(.+)-[0-9]+\.log$`)

// servableLog checks that path is the log of process procID on this node,
// so that a peer can read process logs and nothing else.
func (a *Agent) servableLog(procID, path string) error {
	if st, ok := a.procs.Status(procID); ok && st.LogPath != "" {
		if st.LogPath == path {
			return nil
		}
		return wire.Errorf(wire.CodeUsage, "%s is not the log of process %s", path, procID)
	}
	// A process the agent already forgot: accept the log layout only.
	m := logName.FindStringSubmatch(filepath.Base(path))
	clean := filepath.Clean(path)
	if m == nil || clean != path || !filepath.IsAbs(path) || m[3] != a.cfg.Node ||
		filepath.Base(filepath.Dir(path)) != m[1] || m[1] != strconv.FormatUint(workIDOf(procID), 10) {
		return wire.Errorf(wire.CodeUsage, "%s is not a process log of this node", path)
	}
	return nil
}

// serveLogStream answers a LogRequest from another agent.
func (a *Agent) serveLogStream(s network.Stream) {
	defer s.Close()
	_ = s.SetReadDeadline(time.Now().Add(10 * time.Second))
	var req wire.LogRequest
	if err := wire.ReadMsg(s, &req, 4<<10); err != nil {
		_ = s.Reset()
		return
	}
	_ = s.SetReadDeadline(time.Time{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fail := func(err error) { _ = wire.WriteMsg(s, &wire.LogChunk{Err: err.Error(), Code: wire.ErrorCode(err)}) }
	if err := a.servableLog(req.ProcID, req.Path); err != nil {
		fail(err)
		return
	}
	// The asking agent forwards its caller; this agent trusts that claim
	// as the head trusts the callers agents forward (any member of the
	// cluster network holds the cluster key), and asks the head whether
	// the caller may read the work's logs, as for a local caller.
	var acc wire.LogAccess
	if err := a.callHead(ctx, wire.MethodLogAccess, req.Caller, wire.IDRequest{ID: workIDOf(req.ProcID)}, &acc); err != nil {
		fail(err)
		return
	}
	uid, err := logOwner(acc)
	if err != nil {
		fail(err)
		return
	}
	f, err := openLog(req.Path, uid)
	if err != nil {
		fail(fmt.Errorf("on %s: %w", a.cfg.Node, err))
		return
	}
	defer f.Close()
	if req.Offset > 0 {
		if _, err := f.Seek(req.Offset, io.SeekStart); err != nil {
			fail(fmt.Errorf("seek log: %w", err))
			return
		}
	}
	// The requester closing the stream ends a followed log.
	go func() {
		_, _ = io.Copy(io.Discard, s)
		cancel()
	}()
	running := func() bool {
		st, ok := a.procs.Status(req.ProcID)
		return ok && !ended(st)
	}
	send := func(b []byte) error {
		_ = s.SetWriteDeadline(time.Now().Add(30 * time.Second))
		err := wire.WriteMsg(s, &wire.LogChunk{Data: b})
		if err != nil {
			_ = s.Reset()
		}
		return err
	}
	if err := followFile(ctx, f, send, func() bool { return !req.Follow || !running() }, nil); err != nil {
		fail(fmt.Errorf("read log: %w", err))
		return
	}
	if ctx.Err() == nil {
		_ = wire.WriteMsg(s, &wire.LogChunk{EOF: true})
	}
}

// tailRemote streams the log of a process on another node through that
// node's agent.
func (a *Agent) tailRemote(ctx context.Context, ev *eventWriter, c wire.Caller, p *wire.ProcInfo, follow bool) error {
	var nodes wire.NodeList
	if err := a.callHead(ctx, wire.MethodNodes, c, wire.Empty{}, &nodes); err != nil {
		return err
	}
	var pid peer.ID
	for _, n := range nodes.Nodes {
		if n.Name == p.Node && n.PeerID != "" {
			id, err := peer.Decode(n.PeerID)
			if err != nil {
				return fmt.Errorf("node %s has a bad peer id: %w", p.Node, err)
			}
			pid = id
			p2p.LearnAddrs(a.host, pid, n.Addrs)
		}
	}
	if pid == "" {
		return fmt.Errorf("node %s is not known to the head; its log is %s there", p.Node, p.LogPath)
	}
	s, err := a.host.NewStream(ctx, pid, wire.ProtoLogs)
	if err != nil {
		return fmt.Errorf("cannot reach node %s for the log (%s there): %w", p.Node, p.LogPath, p2p.ExplainDialError(err))
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	if err := wire.WriteMsg(s, &wire.LogRequest{ProcID: p.ID, Path: p.LogPath, Follow: follow, Caller: c}); err != nil {
		return fmt.Errorf("ask node %s for the log: %w", p.Node, err)
	}
	for {
		var ch wire.LogChunk
		if err := wire.ReadMsg(s, &ch, wire.MaxLogChunk+1024); err != nil {
			return fmt.Errorf("log stream from node %s: %w", p.Node, err)
		}
		if len(ch.Data) > 0 {
			if ev.send(wire.AttachEvent{Output: ch.Data}) != nil {
				return nil
			}
		}
		switch {
		case ch.Err != "":
			return wire.Errorf(max(ch.Code, wire.CodeError), "node %s: %s", p.Node, ch.Err)
		case ch.EOF:
			return nil
		}
	}
}
