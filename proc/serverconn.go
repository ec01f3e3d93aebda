package proc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// serverLog is the shim servers' stderr, in the data directory.
const serverLog = "shim-server.log"

// shimServer is the agent's side of a shim server: the one this Manager
// started for its launches, or one of a previous agent whose processes it
// adopted.
type shimServer struct {
	name  string
	pid   int
	start uint64      // its start time (/proc/<pid>/stat)
	proc  *os.Process // nil for an adopted server (not this agent's child)

	// conn is replaced by a reconnection: read it with Manager.mu or wmu
	// held, write it with both.
	conn *net.UnixConn
	wmu  sync.Mutex

	// Guarded by Manager.mu.
	pending map[string]chan handshake // Start calls waiting for their answer
	dead    bool                      // the server is gone
}

func (srv *shimServer) send(m serverMsg) error {
	srv.wmu.Lock()
	defer srv.wmu.Unlock()
	return writeMsg(srv.conn, m)
}

// dialServer connects to the shim server of that name, which must be the
// process pid (the socket's name is public: anyone could have bound it).
func dialServer(name string, pid int) (*net.UnixConn, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: "@" + name, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("the shim server is gone: %w", err)
	}
	if cred, err := PeerCred(c); err != nil || int(cred.Pid) != pid || int(cred.Uid) != os.Geteuid() {
		c.Close()
		return nil, fmt.Errorf("socket %s is not the shim server %d's", name, pid)
	}
	return c, nil
}

// server returns the shim server Start launches through, starting one if
// there is none (or the last one ended).
func (m *Manager) server() (*shimServer, error) {
	m.serverMu.Lock()
	defer m.serverMu.Unlock()
	m.mu.Lock()
	srv, closed := m.current, m.closed
	m.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if srv != nil { // a dead server is no longer current (readServer)
		return srv, nil
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("shim server: %w", err)
	}
	local, remote := os.NewFile(uintptr(fds[0]), "shim-server"), os.NewFile(uintptr(fds[1]), "shim-server")
	defer remote.Close()
	c, err := net.FileConn(local)
	local.Close()
	if err != nil {
		return nil, fmt.Errorf("shim server: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(m.cfg.DataDir, serverLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("shim server: %w", err)
	}
	defer logf.Close()
	argv := append(slices.Clone(m.cfg.ShimServerCommand), m.procsDir)
	p, err := os.StartProcess(argv[0], argv, &os.ProcAttr{
		Dir:   "/",
		Env:   m.serverEnv(runtime.NumCPU()),
		Files: []*os.File{m.devnull, logf, logf, remote},
		Sys:   &syscall.SysProcAttr{Setsid: true},
	})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("launching the shim server %q: %w", argv[0], err)
	}
	start, err := startTime(p.Pid)
	if err != nil {
		// It died at once; its log says why.
		c.Close()
		_, _ = p.Wait()
		return nil, fmt.Errorf("the shim server %q exited at its start (see %s)", argv[0], filepath.Join(m.cfg.DataDir, serverLog))
	}
	srv = &shimServer{name: serverName(p.Pid, start), pid: p.Pid, start: start, conn: c.(*net.UnixConn), proc: p, pending: map[string]chan handshake{}}
	if err := m.addServer(srv, true); err != nil {
		_, _ = p.Wait() // no client, no process: it exits
		return nil, err
	}
	m.log.Info("started the shim server", "pid", p.Pid)
	return srv, nil
}

// addServer registers srv (as the one Start uses when current) and starts
// reading from it; after Close it closes the connection instead.
func (m *Manager) addServer(srv *shimServer, current bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		srv.conn.Close()
		return ErrClosed
	}
	if current {
		m.current = srv
	}
	m.servers[srv.name] = srv
	m.wg.Add(1)
	go m.readServer(srv)
	return nil
}

// connect connects to the shim server ci names, a previous agent's, for
// adopting its processes.
func (m *Manager) connect(ci childInfo) (*shimServer, error) {
	m.mu.Lock()
	srv := m.servers[ci.Server]
	m.mu.Unlock()
	if srv != nil { // a dead server is no longer listed (readServer)
		return srv, nil
	}
	if t, err := startTime(ci.ShimPID); err != nil || t != ci.ShimStart {
		return nil, errors.New("the shim server is gone")
	}
	c, err := dialServer(ci.Server, ci.ShimPID)
	if err != nil {
		return nil, err
	}
	srv = &shimServer{name: ci.Server, pid: ci.ShimPID, start: ci.ShimStart, conn: c, pending: map[string]chan handshake{}}
	if err := m.addServer(srv, false); err != nil {
		return nil, err
	}
	m.log.Info("connected to a shim server", "pid", ci.ShimPID)
	return srv, nil
}

// startServed launches a process through the shim server (Start's second
// half once the directory, the cgroup and spec.json exist).
func (m *Manager) startServed(ctx context.Context, spec Spec, e *entry) (Status, error) {
	srv, err := m.server()
	if err != nil {
		return Status{}, fmt.Errorf("proc: start %s: %w", spec.ID, err)
	}
	ch := make(chan handshake, 1)
	m.mu.Lock()
	if m.closed || srv.dead {
		m.mu.Unlock()
		return Status{}, fmt.Errorf("proc: start %s: the shim server exited", spec.ID)
	}
	e.srv = srv
	e.st.ShimPID = srv.pid
	srv.pending[spec.ID] = ch
	m.mu.Unlock()
	if err := srv.send(serverMsg{Op: opStart, ID: spec.ID}); err != nil {
		// Closing the connection makes readServer reconnect, or report
		// the server's processes lost if it is gone.
		m.mu.Lock()
		srv.conn.Close()
		m.mu.Unlock()
		return Status{}, fmt.Errorf("proc: start %s: shim server %d: %w", spec.ID, srv.pid, err)
	}
	var h handshake
	var ok bool
	select {
	case h, ok = <-ch:
		if !ok {
			return Status{}, fmt.Errorf("proc: start %s: no answer from the shim server %d: it exited or dropped the connection (see %s)", spec.ID, srv.pid, filepath.Join(m.cfg.DataDir, serverLog))
		}
	case <-ctx.Done():
		m.mu.Lock()
		delete(srv.pending, spec.ID)
		m.mu.Unlock()
		return Status{}, ctx.Err()
	}
	return m.started(e, h), nil
}

// readServer reads what srv reports until the connection ends: answers to
// Start, and ends. When the server is gone (not when Close closed the
// connection) every process of it that has not ended is finished: from
// its status.json, or as lost.
func (m *Manager) readServer(srv *shimServer) {
	defer m.wg.Done()
	for {
		m.mu.Lock()
		c := srv.conn
		m.mu.Unlock()
		m.readMessages(srv, c)
		c.Close()
		if !m.reconnect(srv) {
			break
		}
	}
	m.mu.Lock()
	srv.dead = true
	closed := m.closed
	pending := srv.pending
	srv.pending = nil
	if m.current == srv {
		m.current = nil
	}
	delete(m.servers, srv.name)
	left := m.unfinished(srv)
	m.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	if closed {
		return
	}
	m.log.Warn("the shim server exited", "pid", srv.pid, "processes_left", len(left))
	if srv.proc != nil {
		_, _ = srv.proc.Wait()
	}
	for _, id := range left {
		m.mu.Lock()
		e := m.procs[id]
		m.mu.Unlock()
		if e != nil {
			m.finish(id, e)
		}
	}
}

// readMessages handles what srv sends on c until the connection ends. An
// answer to Start is handed to its caller at once; an end is finished on
// another goroutine (finishLater), so that a slow finish (OnExit) does
// not hold the answers that follow. A process's end is finished after its
// answer was handed over: the server sends "started" before "ended".
func (m *Manager) readMessages(srv *shimServer, c *net.UnixConn) {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 4096), maxServerLine)
	for sc.Scan() {
		var msg serverMsg
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			m.log.Error("bad message from the shim server; closing the connection", "pid", srv.pid, "err", err)
			return
		}
		switch msg.Op {
		case opStarted:
			m.mu.Lock()
			ch := srv.pending[msg.ID]
			delete(srv.pending, msg.ID)
			m.mu.Unlock()
			if ch != nil && msg.Start != nil {
				ch <- *msg.Start
			}
		case opEnded:
			m.mu.Lock()
			e := m.procs[msg.ID]
			m.mu.Unlock()
			if e != nil && e.srv == srv {
				m.finishLater(msg.ID, e)
			}
		}
	}
}

// finishLater queues finish(id, e) for a finisher goroutine, starting one
// if fewer than maxFinishers run; a finisher ends when the queue is empty.
// A process's end is queued once per report; finish ignores a second.
func (m *Manager) finishLater(id string, e *entry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ends = append(m.ends, reportedEnd{id: id, e: e})
	if m.finishers < maxFinishers {
		m.finishers++
		m.wg.Add(1) // the reader holds one: Close's Wait has not returned
		go m.finisher()
	}
}

// finisher finishes queued ends until none is left.
func (m *Manager) finisher() {
	defer m.wg.Done()
	for {
		m.mu.Lock()
		if len(m.ends) == 0 {
			m.finishers--
			m.ends = nil // lets the backing array go
			m.mu.Unlock()
			return
		}
		r := m.ends[0]
		m.ends[0] = reportedEnd{}
		m.ends = m.ends[1:]
		m.mu.Unlock()
		m.finish(r.id, r.e)
	}
}

// reconnect connects to srv again after its connection ended, when the
// Manager is open and the server still runs: a server drops an agent that
// does not read its reports for 10 s (a stopped or frozen agent), and
// that must not read as the loss of every process. The starts that waited
// for an answer on the old connection fail; the processes whose end was
// reported there are finished from their status.json. It reports whether
// srv is connected again.
func (m *Manager) reconnect(srv *shimServer) bool {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return false
	}
	if t, err := startTime(srv.pid); err != nil || t != srv.start {
		return false // gone
	}
	time.Sleep(50 * time.Millisecond) // a server that is exiting exits; one that drops us is not hammered
	c, err := dialServer(srv.name, srv.pid)
	if err != nil {
		m.log.Warn("reconnect to the shim server", "pid", srv.pid, "err", err)
		return false
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		c.Close()
		return false
	}
	srv.wmu.Lock()
	srv.conn = c
	srv.wmu.Unlock()
	pending := srv.pending
	srv.pending = map[string]chan handshake{}
	recheck := m.unfinished(srv)
	m.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	m.log.Warn("the shim server's connection ended; reconnected", "pid", srv.pid)
	for _, id := range recheck {
		m.mu.Lock()
		e := m.procs[id]
		m.mu.Unlock()
		if e != nil && exists(filepath.Join(m.procsDir, id, statusFile)) {
			m.finish(id, e)
		}
	}
	return true
}

// unfinished returns the ids, sorted, of srv's processes whose end has not
// been recorded; m.mu is held.
func (m *Manager) unfinished(srv *shimServer) []string {
	var ids []string
	for id, e := range m.procs {
		if e.srv == srv && !e.isDone() {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}
