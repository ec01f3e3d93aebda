package spec

import (
	"time"

	"github.com/ducc-project/ducc/wire"
)

// Defaults the head needs as durations (the key table has them as users
// write them).
const (
	DefaultPingTimeout  = 500 * time.Millisecond
	DefaultPingInterval = 10 * time.Second
	DefaultMaxInstances = 10
)

// fillDefaults sets every field of target that is zero (or negative) and
// whose key has a default for kind.
func fillDefaults(kind Kind, target any) {
	for i := range keys {
		k := &keys[i]
		u := k.use(kind)
		if u == nil || u.def == "" || !zero(u.field(target)) {
			continue
		}
		if err := set(k, u, target, Value{S: u.def}); err != nil {
			panic("spec: bad default of " + k.Name + ": " + err.Error()) // caught by TestDefaultsParse
		}
	}
}

// zero reports whether a field holds its zero value (numbers: or less).
func zero(ptr any) bool {
	switch p := ptr.(type) {
	case *string:
		return *p == ""
	case *int:
		return *p <= 0
	case *int64:
		return *p <= 0
	case *bool:
		return !*p
	case *[]string:
		return len(*p) == 0
	}
	return false
}

// JobDefaults fills the defaults of a job's keys (docs/jobs.md) into zero
// fields. Memory and class come from the scheduler's config: the head's.
func JobDefaults(s *wire.JobSpec) {
	j := Job{Spec: *s}
	fillDefaults(KindJob, &j)
	*s = j.Spec
}

// ServiceDefaults fills the defaults of a service's keys
// (docs/services.md) into zero fields: a service with a command runs one
// instance, max_instances is at least instances, and a Java pinger's
// timeout is DefaultJavaPingTimeout.
func ServiceDefaults(s *wire.ServiceSpec) {
	if s.Instances <= 0 && s.Executable != "" {
		s.Instances = 1
	}
	if s.PingTimeoutMS <= 0 && JavaPinger(*s) {
		s.PingTimeoutMS = DefaultJavaPingTimeout.Milliseconds()
	}
	fillDefaults(KindService, s)
	if s.MaxInstances <= 0 {
		s.MaxInstances = max(DefaultMaxInstances, s.Instances)
	}
}
