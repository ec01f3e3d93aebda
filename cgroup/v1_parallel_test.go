package cgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestV1StartInParallel starts many processes at once, each into a group
// of its own, with StartIn on the v1 backend. Every start waits inside its
// group until all of them are inside theirs: they must run at once, each
// thread in its own group (a thread moves only itself, though all move
// back through the same open files). Each child must land in its group in
// every hierarchy, and every thread must be back in the process's own
// groups at the end.
func TestV1StartInParallel(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		fenced func(i int) bool // which groups get a device fence
	}{
		{"unfenced", 16, func(int) bool { return false }},
		{"fenced", 8, func(int) bool { return true }},
		{"mixed", 16, func(i int) bool { return i%2 == 1 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			anyFenced := false
			for i := range tc.n {
				anyFenced = anyFenced || tc.fenced(i)
			}
			var m *Manager
			if anyFenced {
				m = v1DevicesManager(t)
			} else {
				m = v1Manager(t)
			}
			b := m.backend.(*v1Backend)
			before := threadCgroups(t)

			groups := make([]Group, tc.n)
			for i := range groups {
				groups[i] = create(t, m, fmt.Sprintf("par%d", i), Resources{MemoryLimit: 64 * mib})
				if tc.fenced(i) {
					if err := groups[i].FenceDevices(nvidiaFence); err != nil {
						t.Fatalf("FenceDevices: %v", err)
					}
				}
			}

			// inside: every start is inside its group; all in: each waits
			// for all the others (generous deadline: a failure, not a wait,
			// if starts ran one at a time).
			var inside sync.WaitGroup
			inside.Add(tc.n)
			allIn := make(chan struct{})
			go func() { inside.Wait(); close(allIn) }()
			// gaveUp: one start waited past the deadline; the others
			// (queued behind it, if starts ran one at a time) wait no more.
			gaveUp := make(chan struct{})
			var giveUp sync.Once

			cmds := make([]*exec.Cmd, tc.n)
			errs := make([]error, tc.n)
			var wg sync.WaitGroup
			for i := range tc.n {
				wg.Go(func() {
					cmds[i] = exec.Command("/bin/sleep", "100")
					errs[i] = m.StartIn(groups[i], func(int) error {
						inside.Done()
						select {
						case <-allIn:
						case <-gaveUp:
							return errors.New("gave up waiting for the other starts")
						case <-time.After(time.Minute):
							giveUp.Do(func() { close(gaveUp) })
							return errors.New("the other starts did not get inside their groups within a minute: starts run one at a time?")
						}
						own, err := os.ReadFile("/proc/thread-self/cgroup")
						if err != nil {
							return err
						}
						if err := inEvery(b, string(own), "/"+m.Root()+"/"+groups[i].Name(), tc.fenced(i)); err != nil {
							return fmt.Errorf("the forking thread, with all starts inside: %w", err)
						}
						return cmds[i].Start()
					})
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("StartIn %d: %v", i, err)
				}
			}
			for i, cmd := range cmds {
				t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
				raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
				if err != nil {
					t.Fatal(err)
				}
				if err := inEvery(b, string(raw), "/"+m.Root()+"/"+groups[i].Name(), tc.fenced(i)); err != nil {
					t.Errorf("child %d: %v", i, err)
				}
				if pids, err := groups[i].Procs(); err != nil || !slices.Equal(pids, []int{cmd.Process.Pid}) {
					t.Errorf("Procs of %s = %v, %v; want only the child %d", groups[i].Name(), pids, err, cmd.Process.Pid)
				}
			}
			if after := threadCgroups(t); !slices.Equal(before, after) {
				t.Fatalf("the test process's threads did not all move back:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// inEvery checks that the /proc/<pid>/cgroup text raw puts its task in
// group want (a path below the hierarchies' roots) in every hierarchy of
// b, and in the devices hierarchy too when fenced (and not there
// otherwise, where the devices hierarchy is apart).
func inEvery(b *v1Backend, raw, want string, fenced bool) error {
	in := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[2] == want {
			for _, c := range strings.Split(parts[1], ",") {
				in[c] = true
			}
		}
	}
	var errs []error
	for _, n := range b.names {
		if !in[n] {
			errs = append(errs, fmt.Errorf("not in %s of controller %s", want, n))
		}
	}
	if b.devicesOwn && in[ctrlDevices] != fenced {
		errs = append(errs, fmt.Errorf("in %s of the devices controller: %v, want %v", want, in[ctrlDevices], fenced))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w:\n%s", errors.Join(errs...), raw)
	}
	return nil
}

// v1Manager is a manager of the host's v1 hierarchies, skipping where
// there are none.
func v1Manager(t testing.TB) *Manager {
	if mode := hostMode(); mode != ModeV1 && mode != ModeHybrid {
		t.Skipf("the host has no cgroup v1 hierarchies (mode %q)", mode)
	}
	m := newManager(t)
	if _, ok := m.backend.(*v1Backend); !ok {
		t.Skipf("the manager uses %T, not the v1 backend", m.backend)
	}
	return m
}

// TestV1ForgetOwnTasks checks that dropping the shared tasks files after a
// failed move back closes them for the threads still holding them (their
// move back fails: they end), that the next start opens them again, and
// that a start dropping files already replaced leaves the new ones alone.
func TestV1ForgetOwnTasks(t *testing.T) {
	m := v1Manager(t)
	b := m.backend.(*v1Backend)
	old, _, err := b.ownTasks(false)
	if err != nil {
		t.Fatal(err)
	}
	if again, _, err := b.ownTasks(false); err != nil || again != old {
		t.Fatalf("ownTasks again = %p, %v; want the same files %p", again, err, old)
	}
	b.forgetOwnTasks(old, nil)
	onOwnThread(func() bool {
		if err := moveThreadBack(old.files); !errors.Is(err, os.ErrClosed) {
			t.Errorf("move back through dropped files = %v, want os.ErrClosed", err)
		}
		return false // as startIn would: this thread may be anywhere
	})
	fresh, _, err := b.ownTasks(false)
	if err != nil {
		t.Fatal(err)
	}
	if fresh == old {
		t.Fatal("ownTasks after forgetOwnTasks returned the dropped files")
	}
	b.forgetOwnTasks(old, nil) // a second start that failed on the old files
	if cur, _, err := b.ownTasks(false); err != nil || cur != fresh {
		t.Fatalf("ownTasks = %p, %v after a stale forget; want the fresh files %p", cur, err, fresh)
	}
	onOwnThread(func() bool {
		if err := moveThreadBack(fresh.files); err != nil {
			t.Errorf("move back through the fresh files: %v", err)
			return false
		}
		return true
	})
	g := create(t, m, "after", Resources{})
	cmd := exec.Command("/bin/true")
	if err := m.StartIn(g, func(int) error { return cmd.Run() }); err != nil {
		t.Fatalf("StartIn after a forget: %v", err)
	}
}
