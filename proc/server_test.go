package proc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Many processes started at once through one shim server, most of them
// ending before their start is answered, all end with their own exit code
// and their own log.
func TestServerManyAtOnce(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sp := shSpec(fmt.Sprintf("3.%d", i), fmt.Sprintf("echo %d; exit %d", i, i%7))
			if _, err := m.Start(context.Background(), sp); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	shims := map[int]bool{}
	for i := range n {
		end := e.x.wait(t, fmt.Sprintf("3.%d", i), 20*time.Second)
		if end.State != Exited || end.ExitCode != i%7 {
			t.Errorf("3.%d ended %+v", i, end)
		}
		if b, err := os.ReadFile(end.LogPath); err != nil || string(b) != fmt.Sprintf("%d\n", i) {
			t.Errorf("3.%d log %q %v", i, b, err)
		}
		shims[end.ShimPID] = true
	}
	if len(shims) != 1 {
		t.Errorf("processes had %d shims, want the one server: %v", len(shims), shims)
	}
}

// A process that ends while no agent is connected to its server is
// reported by the next agent's Adopt; the server, left with no process
// and no agent, exits.
func TestServerEndWhileAway(t *testing.T) {
	e := newEnv(t)
	m1 := e.manager(t)
	flag := filepath.Join(e.dataDir, "go")
	st, err := m1.Start(context.Background(), flagSpec("2.1", flag, 5))
	if err != nil {
		t.Fatal(err)
	}
	m1.Close()
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for running(st.ShimPID) {
		if time.Now().After(deadline) {
			t.Fatalf("shim server %d still runs with no process and no agent", st.ShimPID)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, x2, sts := e.adopt(t)
	if len(sts) != 1 || sts[0].State != Exited || sts[0].ExitCode != 5 {
		t.Fatalf("Adopt = %+v", sts)
	}
	if end := x2.wait(t, "2.1", 10*time.Second); end.ExitCode != 5 {
		t.Fatalf("reported %+v", end)
	}
}

// Garbage on the server's socket ends that connection only: the agent's
// processes go on being served.
func TestServerGarbage(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	flag := filepath.Join(e.dataDir, "go")
	st, err := m.Start(context.Background(), flagSpec("1.1", flag, 4))
	if err != nil {
		t.Fatal(err)
	}
	var ci childInfo
	if err := readJSON(filepath.Join(e.dataDir, "procs", "1.1", childFile), &ci); err != nil {
		t.Fatal(err)
	}
	if ci.Server == "" || ci.ShimPID != st.ShimPID {
		t.Fatalf("child.json %+v names no server", ci)
	}
	for _, junk := range []string{"not json\n", `{"op":"start","id":"../../etc"}` + "\n", `{"op":"start","id":"1.1"}` + "\n", string(make([]byte, maxServerLine+10))} {
		c, err := net.Dial("unix", "@"+ci.Server)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte(junk)); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if junk == `{"op":"start","id":"1.1"}`+"\n" && line != `{"op":"started","id":"1.1","start":{"error":"already running"}}`+"\n" {
			t.Errorf("a second start of a running process answered %q", line)
		}
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if end := e.x.wait(t, "1.1", 10*time.Second); end.State != Exited || end.ExitCode != 4 {
		t.Fatalf("%+v", end)
	}
	if _, err := m.Start(context.Background(), shSpec("1.2", "exit 0")); err != nil {
		t.Fatal(err)
	}
	if end := e.x.wait(t, "1.2", 10*time.Second); end.ShimPID != st.ShimPID {
		t.Fatalf("a new server after garbage: %+v", end)
	}
}

// running reports whether pid is a process that has not exited (a zombie
// has: the server this test started is its child until it is reaped).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// A connection that ends while the server runs (a server drops an agent
// that stopped reading) is reconnected: a process that ended meanwhile is
// reported as it ended, not lost, and starts go on through the same server.
func TestServerReconnect(t *testing.T) {
	e := newEnv(t)
	m := e.manager(t)
	flag := filepath.Join(e.dataDir, "go")
	st, err := m.Start(context.Background(), flagSpec("4.1", flag, 6))
	if err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	srv := m.current
	old := srv.conn
	old.Close()
	m.mu.Unlock()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		m.mu.Lock()
		again, dead := srv.conn != old, srv.dead
		m.mu.Unlock()
		if dead {
			t.Fatal("the server was given up")
		}
		if again {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not reconnected in 10 s")
		}
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if end := e.x.wait(t, "4.1", 10*time.Second); end.State != Exited || end.ExitCode != 6 {
		t.Fatalf("ended %+v", end)
	}
	st2, err := m.Start(context.Background(), shSpec("4.2", "exit 0"))
	if err != nil {
		t.Fatal(err)
	}
	if st2.ShimPID != st.ShimPID {
		t.Fatalf("a new server %d after the reconnection (was %d)", st2.ShimPID, st.ShimPID)
	}
	if end := e.x.wait(t, "4.2", 10*time.Second); end.State != Exited {
		t.Fatalf("ended %+v", end)
	}
}

// FuzzServerConn feeds arbitrary bytes to a shim server's connection: it
// answers or closes the connection, never panics, and launches nothing
// that has no spec.
func FuzzServerConn(f *testing.F) {
	f.Add([]byte(`{"op":"start","id":"1.1"}` + "\n"))
	f.Add([]byte(`{"op":"signal","id":"1.1","signal":"SIGTERM"}` + "\n" + `{"op":"signal","id":"x","signal":"kill"}` + "\n"))
	f.Add([]byte(`{"op":"start","id":"../etc"}` + "\n"))
	f.Add([]byte("{\n}\n\x00\xff"))
	f.Add([]byte(`{"op":"nope","id":"a"}` + "\n" + `{"op":"start","id":"a","start":{"pid":1}}`))
	dir := f.TempDir()
	srv := newServer(dir, slog.New(slog.DiscardHandler), host{pid: os.Getpid()})
	// pair connects a new client to srv and returns the agent's end.
	pair := func(t testing.TB) *os.File {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		mine, theirs := os.NewFile(uintptr(fds[0]), "agent"), os.NewFile(uintptr(fds[1]), "server")
		sc, err := net.FileConn(theirs)
		theirs.Close()
		if err != nil {
			t.Fatal(err)
		}
		srv.addClient(sc.(*net.UnixConn))
		return mine
	}
	// An agent that stays connected, so that the server never goes idle.
	keep := pair(f)
	f.Cleanup(func() { keep.Close() })
	go func() { _, _ = io.Copy(io.Discard, keep) }() // ends when keep is closed
	f.Fuzz(func(t *testing.T, in []byte) {
		mine := pair(t)
		defer mine.Close()
		_ = mine.SetDeadline(time.Now().Add(10 * time.Second))
		wrote := make(chan struct{})
		go func() { // ends with the write (the deadline bounds it)
			defer close(wrote)
			_, _ = mine.Write(in)
			if rc, err := mine.SyscallConn(); err == nil {
				_ = rc.Control(func(fd uintptr) { _ = unix.Shutdown(int(fd), unix.SHUT_WR) })
			}
		}()
		_, err := io.Copy(io.Discard, mine)
		<-wrote
		if err != nil {
			t.Fatalf("the server neither answered nor closed the connection: %v", err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("the server made %v in its procs directory", ents)
		}
		srv.mu.Lock()
		exiting := srv.exiting
		srv.mu.Unlock()
		if exiting {
			t.Fatal("the server went idle with an agent connected")
		}
	})
}
