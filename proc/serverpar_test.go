package proc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rawClient is a second agent connection to a running shim server that
// speaks the protocol itself: the tests below send requests in one write,
// so that they reach the server while its launches are in flight.
type rawClient struct {
	c    net.Conn
	msgs chan serverMsg // every line the server sends, in order
}

// dialRaw starts a shim server through m (with a process that runs until
// the test ends) and connects to it as a second agent.
func dialRaw(t *testing.T, e *env, m *Manager) *rawClient {
	t.Helper()
	flag := filepath.Join(e.dataDir, "keep")
	t.Cleanup(func() { _ = os.WriteFile(flag, nil, 0o644) })
	if _, err := m.Start(context.Background(), flagSpec("0.1", flag, 0)); err != nil {
		t.Fatal(err)
	}
	var ci childInfo
	if err := readJSON(filepath.Join(e.dataDir, "procs", "0.1", childFile), &ci); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", "@"+ci.Server)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawClient{c: c, msgs: make(chan serverMsg, 1024)}
	go func() { // ends when the connection does
		defer close(rc.msgs)
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			var msg serverMsg
			if json.Unmarshal(sc.Bytes(), &msg) == nil {
				rc.msgs <- msg
			}
		}
	}()
	return rc
}

// send writes the requests in one write.
func (rc *rawClient) send(t *testing.T, reqs ...serverMsg) {
	t.Helper()
	var b []byte
	for _, r := range reqs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, line...), '\n')
	}
	if _, err := rc.c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// collect reads messages until every id of ids has been reported ended,
// and returns the messages about those ids, in order.
func (rc *rawClient) collect(t *testing.T, ids []string) []serverMsg {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var got []serverMsg
	ended := map[string]bool{}
	deadline := time.After(30 * time.Second)
	for len(ended) < len(want) {
		select {
		case msg, ok := <-rc.msgs:
			if !ok {
				t.Fatalf("the server closed the connection; got %+v", got)
			}
			if !want[msg.ID] {
				continue
			}
			got = append(got, msg)
			if msg.Op == opEnded {
				ended[msg.ID] = true
			}
		case <-deadline:
			t.Fatalf("not every end of %v in 30 s; got %+v", ids, got)
		}
	}
	return got
}

// rawSpec writes the spec.json of a process the server runs without
// cgroups (the raw client makes none).
func rawSpec(t *testing.T, e *env, sp Spec) {
	t.Helper()
	dir := filepath.Join(e.dataDir, "procs", sp.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(dir, specFile, shimSpec{Spec: sp}, false); err != nil {
		t.Fatal(err)
	}
}

// The shim server launches on several goroutines: what the protocol
// promised when it launched one at a time still holds. A signal sent
// while its process is launching reaches the process once it runs; a
// second start of an id that is launching is refused; every process gets
// one answer and then one end; a launch that fails is answered, recorded
// and reported ended.
func TestServerConcurrentRequests(t *testing.T) {
	start := func(id string) serverMsg { return serverMsg{Op: opStart, ID: id} }
	sig := func(id, name string) serverMsg { return serverMsg{Op: opSignal, ID: id, Signal: name} }
	sleeper := func(id string) Spec { return shSpec(id, "sleep 60") }
	const sharedLogDir = "(shared)" // a log directory of the test's
	type want struct {
		state  State
		code   int
		signal string
		reason string // a part of it
	}
	tests := []struct {
		name  string
		specs []Spec // written before the requests
		reqs  []serverMsg
		ids   []string
		// answers: how many "started" each id gets, and how many of them
		// are refusals ("already running").
		answers, refused map[string]int
		want             map[string]want
	}{
		{
			name:    "kill racing its launch",
			specs:   []Spec{sleeper("1.1")},
			reqs:    []serverMsg{start("1.1"), sig("1.1", signalKill)},
			ids:     []string{"1.1"},
			want:    map[string]want{"1.1": {state: Exited, code: -1, signal: "SIGKILL"}},
			answers: map[string]int{"1.1": 1},
		},
		{
			name:    "SIGTERM racing its launch",
			specs:   []Spec{sleeper("2.1")},
			reqs:    []serverMsg{start("2.1"), sig("2.1", "SIGTERM")},
			ids:     []string{"2.1"},
			want:    map[string]want{"2.1": {state: Exited, code: -1, signal: "SIGTERM"}},
			answers: map[string]int{"2.1": 1},
		},
		{
			name:    "many starts of one id at once",
			specs:   []Spec{shSpec("3.1", "exit 3")},
			reqs:    []serverMsg{start("3.1"), start("3.1"), start("3.1"), start("3.1"), start("3.1"), start("3.1"), start("3.1"), start("3.1")},
			ids:     []string{"3.1"},
			want:    map[string]want{"3.1": {state: Exited, code: 3}},
			answers: map[string]int{"3.1": 8},
			refused: map[string]int{"3.1": 7},
		},
		{
			name: "starts and ends interleaving",
			specs: func() []Spec {
				var sps []Spec
				for i := range 24 {
					sp := shSpec(fmt.Sprintf("4.%d", i), fmt.Sprintf("exit %d", i%5))
					sp.LogDir = sharedLogDir // one work's logs, made at once
					sps = append(sps, sp)
				}
				return sps
			}(),
			reqs: func() []serverMsg {
				var r []serverMsg
				for i := range 24 {
					r = append(r, start(fmt.Sprintf("4.%d", i)))
				}
				return r
			}(),
			ids: func() []string {
				var ids []string
				for i := range 24 {
					ids = append(ids, fmt.Sprintf("4.%d", i))
				}
				return ids
			}(),
			want: func() map[string]want {
				w := map[string]want{}
				for i := range 24 {
					w[fmt.Sprintf("4.%d", i)] = want{state: Exited, code: i % 5}
				}
				return w
			}(),
		},
		{
			name: "launches that fail among others",
			specs: []Spec{
				{ID: "5.1", WorkID: 5, Kind: "POP", Node: "n1", Path: "/nonexistent/program"},
				shSpec("5.2", "exit 0"),
				{ID: "5.3", WorkID: 5, Kind: "POP", Node: "n1", Path: "/bin/true", Dir: "/nonexistent"},
			},
			// 5.4 has no spec.json: nothing to launch, nothing to record.
			reqs: []serverMsg{start("5.1"), start("5.2"), start("5.3"), start("5.4"), sig("5.1", signalKill)},
			ids:  []string{"5.1", "5.2", "5.3", "5.4"},
			want: map[string]want{
				"5.1": {state: LaunchFailed, code: -1, reason: "/nonexistent/program"},
				"5.2": {state: Exited},
				"5.3": {state: LaunchFailed, code: -1, reason: "working directory /nonexistent"},
			},
		},
	}
	e := newEnv(t)
	m := e.manager(t)
	rc := dialRaw(t, e, m)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, sp := range tc.specs {
				if sp.LogDir == sharedLogDir {
					sp.LogDir = filepath.Join(e.dataDir, "logs")
				}
				rawSpec(t, e, sp)
			}
			rc.send(t, tc.reqs...)
			msgs := rc.collect(t, tc.ids)
			for _, id := range tc.ids {
				var answers, refused, ends, endAt, lastAnswer int
				for i, msg := range msgs {
					if msg.ID != id {
						continue
					}
					switch msg.Op {
					case opStarted:
						answers++
						lastAnswer = i
						if msg.Start != nil && msg.Start.Error == "already running" {
							refused++
						}
					case opEnded:
						ends++
						endAt = i
					}
				}
				wantAnswers := 1
				if n, ok := tc.answers[id]; ok {
					wantAnswers = n
				}
				if answers != wantAnswers || refused != tc.refused[id] || ends != 1 {
					t.Errorf("%s: %d answers (%d refused), %d ends; want %d (%d), 1: %+v", id, answers, refused, ends, wantAnswers, tc.refused[id], msgs)
				}
				if refused == 0 && lastAnswer > endAt {
					t.Errorf("%s: its end came before its answer: %+v", id, msgs)
				}
				w, ok := tc.want[id]
				var st Status
				err := readJSON(filepath.Join(e.dataDir, "procs", id, statusFile), &st)
				if !ok {
					if err == nil {
						t.Errorf("%s: status.json %+v for a process without a spec", id, st)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", id, err)
				}
				if st.State != w.state || st.ExitCode != w.code || st.Signal != w.signal || !strings.Contains(st.Reason, w.reason) {
					t.Errorf("%s ended %+v, want %+v", id, st, w)
				}
			}
		})
	}
}

// An OnExit that takes its time (the agent's reporting) holds neither
// the answers to later starts nor the other ends: the Manager reads the
// server's lines on, and finishes ends on goroutines of their own. Each
// process's start is answered before its end is reported.
func TestManagerSlowOnExit(t *testing.T) {
	tests := []struct {
		name    string
		blocked int // processes whose OnExit blocks until the end of the test
	}{
		{"one slow OnExit", 1},
		{"more slow OnExits than finishers", maxFinishers + 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			release := make(chan struct{})
			var inOnExit = make(chan string, 64)
			x := &exits{}
			cfg := e.config(x)
			cfg.OnExit = func(st Status) {
				if strings.HasPrefix(st.ID, "7.") {
					inOnExit <- st.ID
					<-release
				}
				x.onExit(st)
			}
			m, err := NewManager(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(m.Close)
			t.Cleanup(func() { close(release) }) // before Close, which waits for OnExit
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for i := range tc.blocked {
				id := fmt.Sprintf("7.%d", i)
				st, err := m.Start(ctx, shSpec(id, "exit 0"))
				if err != nil {
					t.Fatal(err)
				}
				if st.State != Running && st.State != Exited {
					t.Fatalf("%s started %+v", id, st)
				}
			}
			for range min(tc.blocked, maxFinishers) { // the others queue
				select {
				case <-inOnExit:
				case <-ctx.Done():
					t.Fatal("the ends were not reported in 30 s")
				}
			}
			// Every finisher may be held now: starts are still answered,
			// and ends still reach the Manager (they queue).
			for i := range 3 {
				id := fmt.Sprintf("8.%d", i)
				st, err := m.Start(ctx, shSpec(id, "exit 2"))
				if err != nil {
					t.Fatalf("start %s with OnExit held: %v", id, err)
				}
				if st.State != Running && st.State != Exited {
					t.Fatalf("%s started %+v", id, st)
				}
			}
			if tc.blocked < maxFinishers {
				for i := range 3 {
					if end := x.wait(t, fmt.Sprintf("8.%d", i), 20*time.Second); end.ExitCode != 2 {
						t.Errorf("8.%d ended %+v", i, end)
					}
				}
			}
		})
	}
}
