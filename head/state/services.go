package state

import (
	"fmt"
	"slices"
	"time"

	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// Service is the durable state of a registered service. Pinger results
// are not here: they are soft state, rebuilt by a new head's pingers.
type Service struct {
	Spec wire.ServiceSpec `cbor:"1,keyasint"`
	// IDs are the instance ids wanted while the service is started,
	// always the lowest free ids when added (docs/services.md: stable ids 0..n−1).
	IDs       []int `cbor:"2,keyasint,omitempty"`
	Autostart bool  `cbor:"3,keyasint,omitempty"`
	// Started: started by `start` or by a reference; ByRefs: stops
	// service_linger after the last reference ends.
	Started  bool   `cbor:"4,keyasint,omitempty"`
	ByRefs   bool   `cbor:"5,keyasint,omitempty"`
	Disabled bool   `cbor:"6,keyasint,omitempty"`
	Why      string `cbor:"7,keyasint,omitempty"` // why disabled
	// Failures are the times (unix ms) of runtime failures within the
	// failure window; InitFailures counts initialization failures since
	// the last instance that initialized.
	Failures     []int64 `cbor:"8,keyasint,omitempty"`
	InitFailures int     `cbor:"9,keyasint,omitempty"`
	LastUse      int64   `cbor:"10,keyasint,omitempty"`
}

// PingOnly reports whether the service has no processes, only a pinger.
func (s *Service) PingOnly() bool { return s.Spec.Executable == "" }

func (s *Service) copy() *Service {
	c := *s
	c.IDs = slices.Clone(s.IDs)
	c.Failures = slices.Clone(s.Failures)
	c.Spec.Args = slices.Clone(s.Spec.Args)
	c.Spec.Dependency = slices.Clone(s.Spec.Dependency)
	c.Spec.PingArgs = slices.Clone(s.Spec.PingArgs)
	c.Spec.Environment = slices.Clone(s.Spec.Environment)
	c.Spec.Administrators = slices.Clone(s.Spec.Administrators)
	return &c
}

// SvcOp is a kind of change of a service (ServiceChange.Op). Stored as
// its name, a CBOR text string.
type SvcOp string

// Service change operations.
const (
	SvcOpStart     SvcOp = "start"     // Started, not by references; N > 0 adds N instances
	SvcOpStop      SvcOp = "stop"      // N > 0: remove the N newest instances; else stop and disable (Reason)
	SvcOpEnable    SvcOp = "enable"    // clear Disabled and the failure counts
	SvcOpDisable   SvcOp = "disable"   // Disabled with Reason
	SvcOpModify    SvcOp = "modify"    // take Keys from Spec
	SvcOpObserve   SvcOp = "observe"   // ByRefs
	SvcOpIgnore    SvcOp = "ignore"    // not ByRefs
	SvcOpRefStart  SvcOp = "refstart"  // started by a reference
	SvcOpRefStop   SvcOp = "refstop"   // the linger after the last reference passed
	SvcOpAdd       SvcOp = "add"       // a pinger's additions (N), within max_instances
	SvcOpDelete    SvcOp = "delete"    // a pinger's deletions (IDs)
	SvcOpAutostart SvcOp = "autostart" // a pinger's autostart answer (Bool)
	SvcOpLastUse   SvcOp = "lastuse"   // a pinger's last_use (N)
	SvcOpReady     SvcOp = "ready"     // an instance initialized (ProcID of the command)
)

func (o SvcOp) String() string { return string(o) }

// ServiceChange is one change of a service.
type ServiceChange struct {
	Op     SvcOp             `cbor:"1,keyasint"`
	N      int64             `cbor:"2,keyasint,omitempty"`
	IDs    []int             `cbor:"3,keyasint,omitempty"`
	Spec   *wire.ServiceSpec `cbor:"4,keyasint,omitempty"`
	Keys   []string          `cbor:"5,keyasint,omitempty"`
	Bool   bool              `cbor:"6,keyasint,omitempty"`
	Reason string            `cbor:"7,keyasint,omitempty"`
}

// ActiveService returns the active service registered at endpoint, or nil.
func (v *View) ActiveService(endpoint string) *Work { return v.f.idx.services[endpoint] }

func (f *FSM) svcRegister(c *Command) Result {
	if c.Work == nil || c.Work.Service == nil {
		return Result{Err: fmt.Errorf("register without a service")}
	}
	if w := f.idx.services[c.Work.Service.Spec.Endpoint]; w != nil {
		return Result{Err: fmt.Errorf("endpoint %s is already registered by service %d", w.Service.Spec.Endpoint, w.ID)}
	}
	w := *c.Work
	w.Kind = wire.WorkService
	w.ID = f.nextID
	f.nextID++
	w.SubmittedAt = c.Time
	w.State = StateRunning // the Service Manager shows the service's own state
	w.Procs = nil
	w.Job = nil
	s := w.Service.copy()
	s.IDs = nil
	s.addIDs(s.Spec.Instances)
	s.Autostart = s.Spec.Autostart
	s.Started = s.Autostart // autostart: kept running from registration and every cluster start
	w.Service = s
	w.Deps = slices.Clone(s.Spec.Dependency)
	f.work[w.ID] = &w
	return Result{ID: w.ID}
}

// addIDs adds n instance ids, the lowest free first, up to max_instances.
func (s *Service) addIDs(n int) {
	for i := 0; n > 0 && len(s.IDs) < max(s.Spec.MaxInstances, 1); i++ {
		if !slices.Contains(s.IDs, i) {
			s.IDs = append(s.IDs, i)
			n--
		}
	}
	slices.Sort(s.IDs)
}

// setCount grows (lowest free ids) or shrinks (highest ids) to n.
func (s *Service) setCount(n int) {
	if n > len(s.IDs) {
		s.addIDs(n - len(s.IDs))
	}
	if n < len(s.IDs) {
		s.IDs = s.IDs[:n]
	}
}

func (f *FSM) svcChange(c *Command) Result {
	w := f.work[c.WorkID]
	if w == nil || w.Service == nil || c.Service == nil {
		return Result{Err: fmt.Errorf("no service %d", c.WorkID)}
	}
	if w.Ended() {
		return Result{Err: fmt.Errorf("service %d is unregistered", w.ID)}
	}
	s, ch := w.Service, c.Service
	switch ch.Op {
	case SvcOpStart:
		s.Started, s.ByRefs = true, false
		if ch.N > 0 {
			s.addIDs(int(ch.N))
		} else if len(s.IDs) == 0 && !s.PingOnly() {
			s.addIDs(max(s.Spec.Instances, 1))
		}
	case SvcOpStop:
		if ch.N > 0 {
			s.setCount(max(len(s.IDs)-int(ch.N), 0))
			break
		}
		s.Started, s.ByRefs = false, false
		s.Disabled, s.Why = true, ch.Reason
	case SvcOpEnable:
		s.Disabled, s.Why, s.Failures, s.InitFailures = false, "", nil, 0
		if s.Autostart {
			s.Started, s.ByRefs = true, false
		}
	case SvcOpDisable:
		s.Disabled, s.Why = true, ch.Reason
	case SvcOpModify:
		if ch.Spec == nil {
			return Result{Err: fmt.Errorf("modify without values")}
		}
		modify(s, ch.Spec, ch.Keys)
		sp := &s.Spec
		w.Description, w.Memory, w.Class = sp.Description, sp.Memory, sp.Class
		w.GPUs, w.GPUMemory, w.GPUModel = sp.GPUs, sp.GPUMemory, sp.GPUModel
		w.Path, w.Args, w.Dir, w.LogDir = sp.Executable, slices.Clone(sp.Args), sp.WorkingDirectory, sp.LogDirectory
		w.Env = ServiceEnv(w.User, w.Home, sp.Environment)
		w.Deps = slices.Clone(sp.Dependency)
	case SvcOpObserve:
		s.ByRefs = true
	case SvcOpIgnore:
		s.ByRefs = false
	case SvcOpRefStart:
		if !s.Disabled && !s.Started {
			s.Started, s.ByRefs = true, true
			if len(s.IDs) == 0 && !s.PingOnly() {
				s.addIDs(max(s.Spec.Instances, 1))
			}
		}
	case SvcOpRefStop:
		if s.ByRefs {
			s.Started = false
		}
	case SvcOpAdd:
		s.addIDs(int(ch.N))
	case SvcOpDelete:
		s.IDs = slices.DeleteFunc(s.IDs, func(id int) bool { return slices.Contains(ch.IDs, id) })
	case SvcOpAutostart:
		s.Autostart = ch.Bool
		if s.Autostart && !s.Disabled {
			s.Started, s.ByRefs = true, false
		}
	case SvcOpLastUse:
		s.LastUse = ch.N
	case SvcOpReady:
		if p := w.proc(c.ProcID); p != nil && !p.Ended() && p.ReadyAt == 0 {
			p.ReadyAt = c.Time
			p.InitMS = c.Time - max(p.StartedAt, p.AssignedAt)
			s.InitFailures = 0
		}
	default:
		return Result{Err: fmt.Errorf("unknown service change %q", ch.Op)}
	}
	return Result{ID: w.ID}
}

// ServiceEnv is the environment of a service instance: a minimal
// login-like base, then what the registration lists.
func ServiceEnv(user, home string, env []string) []string {
	if home == "" {
		home = "/"
	}
	base := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "USER=" + user, "LOGNAME=" + user}
	return append(base, env...)
}

// modify applies `ducc services modify`: each key's new value (merged
// by package spec), then what the key changes beyond the spec.
func modify(s *Service, n *wire.ServiceSpec, keys []string) {
	sp := &s.Spec
	for _, k := range keys {
		spec.Merge(sp, n, k)
		switch k {
		case "instances":
			sp.MaxInstances = max(sp.MaxInstances, sp.Instances)
			s.setCount(sp.Instances)
		case "autostart":
			s.Autostart = sp.Autostart
			if s.Autostart && !s.Disabled {
				s.Started, s.ByRefs = true, false
			}
		case "max_instances":
			sp.MaxInstances = max(sp.MaxInstances, 1)
			if len(s.IDs) > sp.MaxInstances {
				s.setCount(sp.MaxInstances)
			}
		}
	}
}

// serviceAfterProc counts the failures of a service instance and disables
// the service when they pass its limits (docs/services.md). A process the head
// stopped is not a failure.
func (f *FSM) serviceAfterProc(w *Work, p *Proc, now int64) {
	s := w.Service
	if !p.Ended() || (p.Stop && !p.StopCounts) {
		return
	}
	sp := s.Spec
	if p.ReadyAt == 0 {
		s.InitFailures++
		if s.InitFailures > sp.InitFailuresLimit && !s.Disabled {
			s.Disabled = true
			s.Why = fmt.Sprintf("Excessive initialization errors: %d instances failed to initialize (instance_init_failures_limit is %d); last: %s",
				s.InitFailures, sp.InitFailuresLimit, p.Reason)
		}
		return
	}
	cut := now - sp.FailuresWindowMS
	s.Failures = slices.DeleteFunc(s.Failures, func(t int64) bool { return t < cut })
	s.Failures = append(s.Failures, now)
	if len(s.Failures) > sp.FailuresLimit && !s.Disabled {
		s.Disabled = true
		s.Why = fmt.Sprintf("Excessive runtime errors: %d instance failures within %s (instance_failures_limit is %d); last: %s",
			len(s.Failures), time.Duration(sp.FailuresWindowMS)*time.Millisecond, sp.FailuresLimit, p.Reason)
	}
}

func (f *FSM) depsMet(c *Command) Result {
	w := f.work[c.WorkID]
	if w == nil {
		return Result{Err: fmt.Errorf("no work %d", c.WorkID)}
	}
	if w.State == StateWaitingForServices {
		w.State = StateWaitingForResources
		if w.Job != nil && w.Job.HasDriver() && !w.Job.DriverReady {
			w.State = StateWaitingForDriver
		}
	}
	return Result{ID: w.ID}
}
