package proc

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/ducc-project/ducc/cgroup"
	"golang.org/x/sys/unix"
)

// The shim server: one long-lived shim per agent that launches, watches
// and reaps all of the agent's processes (doc.go, "The shim server").
//
// Agent and server speak JSON lines (serverMsg) over a stream socket: the
// agent's end of a socket pair for the agent that started the server, an
// abstract unix socket (serverName) for an agent that adopts the server's
// processes after a restart.

// Ops of serverMsg.
const (
	opStart   = "start"   // agent → server: launch the process of procs/<id>
	opSignal  = "signal"  // agent → server: signal it (Signal)
	opStarted = "started" // server → agent: the answer to start (Start)
	opEnded   = "ended"   // server → agent: the process ended; status.json is written
)

// signalKill in serverMsg.Signal means: SIGKILL the process group and
// everything in the cgroup (a per-process shim's SIGUSR1).
const signalKill = "kill"

// maxServerLine bounds one message; a longer one ends the connection.
const maxServerLine = 64 << 10

// serverMsg is one line between an agent and a shim server.
type serverMsg struct {
	Op     string     `json:"op"`
	ID     string     `json:"id"`
	Signal string     `json:"signal,omitempty"` // a signal name (SIGTERM) or signalKill
	Start  *handshake `json:"start,omitempty"`
}

// serverName is the abstract socket name of the server process h: its pid
// and start time, so that a recycled pid never names an older server.
func serverName(pid int, start uint64) string {
	return fmt.Sprintf("ducc-shim-server/%d/%d", pid, start)
}

// writeMsg writes m as one line on c, within a deadline: a peer that
// stops reading ends the connection instead of blocking the sender. The
// caller serializes writes on c.
func writeMsg(c *net.UnixConn, m serverMsg) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Write(append(b, '\n'))
	return err
}

// PeerCred returns the credentials the kernel gives for the process at the
// other end of the unix socket c (SO_PEERCRED): the shim server and the
// agent's local API decide by them who is calling.
func PeerCred(c *net.UnixConn) (*unix.Ucred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, serr
}

// RunShimServer is the entry point of `ducc-shim shim-server <procs
// directory>`; it returns the exit code for os.Exit. It expects its first
// agent's connection on fd 3, logs its warnings on stderr, and exits once
// it has no process and no agent left.
func RunShimServer(args []string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("component", "shim-server", "pid", os.Getpid())
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: ducc shim-server <procs directory> (started by the ducc agent, not by hand)")
		return 2
	}
	syscall.CloseOnExec(3)
	syscall.Umask(baseUmask) // the files it creates get explicit modes (umask.go)
	// Only the agent (a request, or SIGKILL) ends the server: a stop
	// signal meant for the agent must not take its processes' parent.
	// Caught and dropped, not ignored: an ignored signal stays ignored in
	// the children.
	signal.Notify(make(chan os.Signal, 1), unix.SIGPIPE, unix.SIGHUP, unix.SIGINT, unix.SIGTERM)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, unix.SIGCHLD)
	if err := defaultIgnoredSignals(); err != nil {
		log.Warn("signals the children may inherit ignored", "err", err)
	}

	f := os.NewFile(3, "agent")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		log.Error("no agent connection on fd 3", "err", err)
		return 1
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		log.Error("fd 3 is not a unix socket")
		return 1
	}
	me := self()
	me.server = serverName(me.pid, me.start)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: "@" + me.server, Net: "unix"})
	if err != nil {
		log.Error("listen", "err", err)
		return 1
	}
	srv := newServer(args[0], log, me)
	srv.addClient(uc)
	go srv.accept(ln) // ends when ln is closed
	go srv.reap(chld) // ends when the server is idle
	<-srv.idle
	ln.Close()
	return 0
}

// How many launches, and how many records of ends, a server runs at once.
// A launch is mostly file and cgroup work on the disk and the kernel; a
// few at once keep cores busy without piling up threads blocked in
// system calls.
const (
	maxLaunches = 4
	maxFinishes = 4
)

// server is a shim server's state.
type server struct {
	procsDir string
	log      *slog.Logger
	self     host

	// umask keeps the launches' file creations out of their forks, which
	// set the process-wide umask to the child's (umask.go).
	umask umaskLock

	cgMu    sync.Mutex
	cgroups map[string]*cgroup.Manager // by configuration; cgMu

	// forkMu is held shared across each fork and alone by the reaper
	// across wait4, so that the reaper never reaps a child whose exec
	// failed (ForkExec reaps those itself). Forks run at once with each
	// other (on cgroup v1 too: cgroup.Manager.StartIn runs each on a
	// thread of its own), never with a wait4.
	forkMu sync.RWMutex

	launchSem chan struct{} // a token per launch running (maxLaunches)
	finishSem chan struct{} // a token per end being recorded (maxFinishes)

	mu      sync.Mutex
	byPID   map[int]*served    // launched, registered and not reaped
	byID    map[string]*served // the same, and those still launching, by process id
	early   map[int]*exit      // reaped before their launch registered them
	clients map[*serverClient]struct{}
	active  int           // launches and processes not yet reported ended
	idle    chan struct{} // closed when there is no client and nothing active
	exiting bool
}

// served is one process of a server from its start request until it is
// reaped (or its launch failed).
type served struct {
	id string
	s  *shim
	// Guarded by server.mu.
	launched bool             // registered in byPID: signals go to the child
	signals  []syscall.Signal // received while it launched, sent once registered
}

func newServer(procsDir string, log *slog.Logger, me host) *server {
	return &server{
		procsDir: procsDir, log: log, self: me,
		cgroups:   map[string]*cgroup.Manager{},
		launchSem: make(chan struct{}, maxLaunches),
		finishSem: make(chan struct{}, maxFinishes),
		byPID:     map[int]*served{}, byID: map[string]*served{}, early: map[int]*exit{},
		clients: map[*serverClient]struct{}{},
		idle:    make(chan struct{}),
	}
}

// serverClient is one agent connected to the server.
type serverClient struct {
	conn *net.UnixConn
	wmu  sync.Mutex
}

func (cl *serverClient) send(m serverMsg) error {
	cl.wmu.Lock()
	defer cl.wmu.Unlock()
	return writeMsg(cl.conn, m)
}

func (srv *server) accept(ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				srv.log.Error("accept", "err", err)
			}
			return
		}
		cred, err := PeerCred(c)
		if err != nil || int(cred.Uid) != os.Geteuid() {
			srv.log.Warn("refused a connection from another user", "err", err)
			c.Close()
			continue
		}
		srv.addClient(c)
	}
}

// addClient serves c until it closes, on a goroutine of its own.
func (srv *server) addClient(c *net.UnixConn) {
	cl := &serverClient{conn: c}
	srv.mu.Lock()
	if srv.exiting {
		srv.mu.Unlock()
		c.Close()
		return
	}
	srv.clients[cl] = struct{}{}
	srv.mu.Unlock()
	go srv.serve(cl) // ends when the agent closes the connection
}

// serve handles cl's requests in order until the connection ends. Each
// start is registered here, in order (a second start of an id that is
// launching or running is refused at once), then launched on a goroutine
// of its own (at most maxLaunches at once); a signal for a process still
// launching is kept and sent once its launch registers it. The connection
// closes once the launches it asked for have answered.
func (srv *server) serve(cl *serverClient) {
	var launches sync.WaitGroup
	defer func() {
		launches.Wait()
		cl.conn.Close()
		srv.mu.Lock()
		delete(srv.clients, cl)
		srv.checkIdle()
		srv.mu.Unlock()
	}()
	sc := bufio.NewScanner(cl.conn)
	sc.Buffer(make([]byte, 0, 4096), maxServerLine)
	for sc.Scan() {
		var m serverMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			srv.log.Warn("bad request; closing the connection", "err", err)
			return
		}
		if err := ValidID(m.ID); err != nil {
			srv.log.Warn("bad request; closing the connection", "err", err)
			return
		}
		switch m.Op {
		case opStart:
			p := srv.register(m.ID)
			if p == nil {
				_ = cl.send(serverMsg{Op: opStarted, ID: m.ID, Start: &handshake{Error: "already running"}})
				continue
			}
			launches.Add(1)
			go func() { // ends with the launch
				defer launches.Done()
				srv.launch(cl, p)
			}()
		case opSignal:
			srv.signal(m.ID, m.Signal)
		default:
			srv.log.Warn("unknown request", "op", m.Op, "id", m.ID)
		}
	}
	if err := sc.Err(); err != nil {
		srv.log.Warn("agent connection", "err", err)
	}
}

// checkIdle closes idle when nothing is left to do; srv.mu held.
func (srv *server) checkIdle() {
	if srv.exiting || srv.active > 0 || len(srv.clients) > 0 {
		return
	}
	srv.exiting = true
	close(srv.idle)
}

// cgroupsFor is the cgroup manager of a spec's configuration.
func (srv *server) cgroupsFor(sp *shimSpec) (*cgroup.Manager, error) {
	srv.cgMu.Lock()
	defer srv.cgMu.Unlock()
	key := fmt.Sprintf("%t|%s|%s|%s", sp.CgroupEnabled, sp.CgroupRoot, sp.CgroupMode, sp.CgroupMount)
	if cg, ok := srv.cgroups[key]; ok {
		return cg, nil
	}
	cg, err := newCgroups(sp, srv.log)
	if err != nil {
		return nil, err
	}
	srv.cgroups[key] = cg
	return cg, nil
}

// register records a start request for id, or returns nil when id is
// launching or running already.
func (srv *server) register(id string) *served {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if _, ok := srv.byID[id]; ok {
		return nil
	}
	p := &served{id: id, s: &shim{dir: filepath.Join(srv.procsDir, id), log: srv.log, forkMu: &srv.forkMu, umask: &srv.umask}}
	srv.byID[id] = p
	srv.active++
	return p
}

// launch starts the registered process p and answers cl; the end of a
// process that could not start is reported at once. The answer goes out
// before the process is registered for the reaper, so that an agent
// always reads a process's "started" before its "ended" (a child reaped
// meanwhile waits in early).
func (srv *server) launch(cl *serverClient, p *served) {
	srv.launchSem <- struct{}{}
	h, err := srv.launchOne(p.s)
	<-srv.launchSem
	if err != nil {
		srv.log.Error("launch", "id", p.id, "err", err)
	}
	failed := h.Error != "" || err != nil
	if failed {
		srv.mu.Lock()
		delete(srv.byID, p.id) // its signals are moot
		srv.mu.Unlock()
	}
	if err := cl.send(serverMsg{Op: opStarted, ID: p.id, Start: &h}); err != nil {
		srv.log.Warn("answer start", "id", p.id, "err", err)
	}
	if failed {
		srv.reportEnded(p.id) // status.json holds the failure (or nothing: lost)
		return
	}
	s := p.s
	srv.mu.Lock()
	if ps, ok := srv.early[s.pid]; ok {
		// It ended already: the signals that came during its launch are
		// moot, and its pid may be another's now.
		delete(srv.early, s.pid)
		delete(srv.byID, p.id)
		srv.mu.Unlock()
		srv.finish(s, ps)
		return
	}
	p.launched = true
	srv.byPID[s.pid] = p
	for _, sig := range p.signals {
		s.signal(sig)
	}
	p.signals = nil
	srv.mu.Unlock()
}

// launchOne runs s.launch (at most maxLaunches at once: launch). A panic
// in it (a bug) fails that launch rather than taking every process of the
// server with it.
func (srv *server) launchOne(s *shim) (h handshake, err error) {
	defer func() {
		if r := recover(); r != nil {
			srv.log.Error("launch panicked", "dir", s.dir, "panic", r, "stack", string(debug.Stack()))
			h, err = handshake{Error: fmt.Sprintf("internal error in the shim server: %v", r)}, fmt.Errorf("launch panicked: %v", r)
		}
	}()
	return s.launch(srv.cgroupsFor, srv.self)
}

// signal signals process id's child if it has not been reaped; while id
// is launching, the signal is kept and sent once the launch has
// registered the child (launch).
func (srv *server) signal(id, name string) {
	sig := unix.SIGUSR1
	if name != signalKill {
		if sig = unix.SignalNum(name); sig == 0 {
			srv.log.Warn("unknown signal", "id", id, "signal", name)
			return
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	p, ok := srv.byID[id]
	switch {
	case !ok:
	case !p.launched:
		p.signals = append(p.signals, sig)
	default:
		p.s.signal(sig)
	}
}

// reap reaps the children on every SIGCHLD until the server is idle.
func (srv *server) reap(chld <-chan os.Signal) {
	for {
		select {
		case <-chld:
		case <-srv.idle:
			return
		}
		for srv.reapOne() {
		}
	}
}

// reapOne reaps one ended child, if any, and has it finished on a
// goroutine of its own (at most maxFinishes at once; when as many are
// running, it waits for one to end).
func (srv *server) reapOne() bool {
	var ps exit
	var ru syscall.Rusage
	srv.forkMu.Lock()
	pid, err := syscall.Wait4(-1, &ps.status, syscall.WNOHANG, &ru)
	srv.forkMu.Unlock()
	if errors.Is(err, syscall.EINTR) {
		return true
	}
	if err != nil || pid <= 0 {
		return false
	}
	ps.usage = &ru
	srv.mu.Lock()
	p, ok := srv.byPID[pid]
	if !ok {
		srv.early[pid] = &ps
		srv.mu.Unlock()
		return true
	}
	delete(srv.byPID, pid)
	delete(srv.byID, p.id)
	srv.mu.Unlock()
	srv.finishSem <- struct{}{}
	go func() { // ends with the record (active holds the server until then)
		defer func() { <-srv.finishSem }()
		srv.finish(p.s, &ps)
	}()
	return true
}

// finish records how a reaped child ended and reports it.
func (srv *server) finish(s *shim, ps *exit) {
	defer srv.reportEnded(s.st.ID) // without status.json the agent finds it lost
	defer func() {
		if r := recover(); r != nil { // a bug: this process's end is lost, not the server
			srv.log.Error("recording an end panicked", "id", s.st.ID, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	if err := s.ended(ps); err != nil {
		srv.log.Error("record the end", "id", s.st.ID, "err", err)
	}
}

// reportEnded tells every agent that id ended, and ends its activity.
func (srv *server) reportEnded(id string) {
	srv.mu.Lock()
	cls := make([]*serverClient, 0, len(srv.clients))
	for cl := range srv.clients {
		cls = append(cls, cl)
	}
	srv.mu.Unlock()
	for _, cl := range cls {
		if err := cl.send(serverMsg{Op: opEnded, ID: id}); err != nil {
			srv.log.Warn("report an end; closing the connection", "id", id, "err", err)
			cl.conn.Close()
		}
	}
	srv.mu.Lock()
	srv.active--
	srv.checkIdle()
	srv.mu.Unlock()
}
