package spec

import (
	"errors"
	"fmt"

	"github.com/ducc-project/ducc/units"
	"github.com/ducc-project/ducc/wire"
)

// MaxItemSize bounds one work item.
const MaxItemSize = 1 << 20

// MaxServiceInstances bounds instances and max_instances (the head gives
// each instance 16 bits of a scheduler id).
const MaxServiceInstances = 1<<16 - 1

// checkFields checks the fields of a wire request field by field, as they
// arrive at the head from any client: numbers must not be negative (zero
// means the default) and checked strings must be what the check makes of
// them.
func checkFields(kind Kind, target any) error {
	for i := range keys {
		k := &keys[i]
		u := k.use(kind)
		if u == nil {
			continue
		}
		switch p := u.field(target).(type) {
		case *int:
			if *p < 0 {
				return fmt.Errorf("%s must not be negative, got %d", k.Name, *p)
			}
		case *int64:
			if *p < 0 {
				return fmt.Errorf("%s must not be negative, got %d", k.Name, *p)
			}
			if (k.Type == Minutes || k.Type == Millis) && *p > units.MaxMillis {
				return fmt.Errorf("%s is too large: %d ms, at most %d ms (about 292 years)", k.Name, *p, units.MaxMillis)
			}
		case *string:
			if k.Check != nil && *p != "" {
				if s, err := k.Check(*p); err != nil || s != *p {
					if err == nil {
						err = fmt.Errorf("write %q", s)
					}
					return fmt.Errorf("%s: %w", k.Name, err)
				}
			}
		}
	}
	return nil
}

// ValidateJob refuses a job spec that could never run, without looking at
// the cluster.
func ValidateJob(s wire.JobSpec) error {
	if s.Executable == "" {
		return errors.New("process_executable is required: the worker command that processes the items")
	}
	if s.DriverExecutable == "" && len(s.DriverArgs) > 0 {
		return errors.New("driver_executable_args needs a driver_executable")
	}
	j := Job{Spec: s}
	if err := checkFields(KindJob, &j); err != nil {
		return err
	}
	return checkGPU(KindJob, s.GPUs, s.GPUMemory, s.GPUModel, keyName)
}

// CheckItems refuses work items that are too big.
func CheckItems(items []string) error {
	for i, it := range items {
		if len(it) > MaxItemSize {
			return fmt.Errorf("work item %d is %d bytes; items may be at most 1 MiB (pass a file name instead)", i, len(it))
		}
	}
	return nil
}

// ValidateService refuses a registration that could never work, without
// looking at the cluster.
func ValidateService(s wire.ServiceSpec) error {
	kind, _, err := ParseEndpoint(s.Endpoint)
	if err != nil {
		return err
	}
	if kind == EndpointCustom && s.PingExecutable == "" && s.PingClass == "" {
		return fmt.Errorf("service_request_endpoint %s is CUSTOM: give its pinger with service_ping_executable (a command) or service_ping_class (a Java pinger); HTTP:, TCP: and UIMA-AS: endpoints have built-in pingers", s.Endpoint)
	}
	if err := checkJavaPinger(s, kind); err != nil {
		return err
	}
	if err := validateUIMAAS(s, kind); err != nil {
		return err
	}
	for _, d := range s.Dependency {
		if d == s.Endpoint {
			return fmt.Errorf("service_dependency: a service cannot depend on itself (%s)", d)
		}
		if _, _, err := ParseEndpoint(d); err != nil {
			return fmt.Errorf("service_dependency: %w", err)
		}
	}
	if err := checkFields(KindService, &s); err != nil {
		return err
	}
	if err := checkGPU(KindService, s.GPUs, s.GPUMemory, s.GPUModel, keyName); err != nil {
		return err
	}
	if s.Executable == "" && (s.Instances > 0 || len(s.Args) > 0) {
		return errors.New("instances and process_executable_args need a process_executable; without one the service is ping-only")
	}
	if s.MaxInstances > 0 && s.Instances > s.MaxInstances {
		return fmt.Errorf("instances (%d) is more than max_instances (%d)", s.Instances, s.MaxInstances)
	}
	if s.Instances > MaxServiceInstances || s.MaxInstances > MaxServiceInstances {
		return fmt.Errorf("at most %d instances", MaxServiceInstances)
	}
	return nil
}

// ValidateRun refuses a managed reservation that could never run.
func ValidateRun(r wire.RunRequest) error {
	if r.Path == "" {
		return errors.New("no command given; usage: ducc run [flags] -- CMD [ARGS]")
	}
	if err := checkFields(KindRun, &Run{Req: r}); err != nil {
		return err
	}
	return checkGPU(KindRun, r.GPUs, r.GPUMemory, r.GPUModel, keyName)
}

// ValidateReserve refuses a reservation that could never be granted.
func ValidateReserve(r wire.ReserveRequest) error {
	if r.Memory <= 0 {
		return errors.New("say how big a machine to reserve: --memory 64G")
	}
	if err := checkFields(KindReserve, &Reserve{Req: r}); err != nil {
		return err
	}
	return checkGPU(KindReserve, r.GPUs, 0, r.GPUModel, keyName)
}
