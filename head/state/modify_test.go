package state

import (
	"reflect"
	"testing"

	"github.com/ducc-project/ducc/wire"
)

// TestServiceModify: `ducc services modify` takes the given keys' values
// and applies what they change beyond the spec.
func TestServiceModify(t *testing.T) {
	tests := []struct {
		name  string
		spec  wire.ServiceSpec // the new values
		keys  []string
		check func(t *testing.T, w *Work)
	}{
		{"instances up to a new max", wire.ServiceSpec{Instances: 12}, []string{"instances"}, func(t *testing.T, w *Work) {
			s := w.Service
			if s.Spec.Instances != 12 || s.Spec.MaxInstances != 12 || len(s.IDs) != 12 {
				t.Errorf("instances %d, max %d, ids %v", s.Spec.Instances, s.Spec.MaxInstances, s.IDs)
			}
		}},
		{"instances down", wire.ServiceSpec{Instances: 1}, []string{"instances"}, func(t *testing.T, w *Work) {
			if !reflect.DeepEqual(w.Service.IDs, []int{0}) {
				t.Errorf("ids %v", w.Service.IDs)
			}
		}},
		{"max_instances below the count", wire.ServiceSpec{MaxInstances: 1}, []string{"max_instances"}, func(t *testing.T, w *Work) {
			if w.Service.Spec.MaxInstances != 1 || !reflect.DeepEqual(w.Service.IDs, []int{0}) {
				t.Errorf("max %d, ids %v", w.Service.Spec.MaxInstances, w.Service.IDs)
			}
		}},
		{"max_instances zero is one", wire.ServiceSpec{}, []string{"max_instances"}, func(t *testing.T, w *Work) {
			if w.Service.Spec.MaxInstances != 1 {
				t.Errorf("max %d", w.Service.Spec.MaxInstances)
			}
		}},
		{"autostart starts", wire.ServiceSpec{Autostart: true}, []string{"autostart"}, func(t *testing.T, w *Work) {
			if s := w.Service; !s.Autostart || !s.Spec.Autostart || !s.Started || s.ByRefs {
				t.Errorf("service %+v", s)
			}
		}},
		{"command, environment and memory reach the work", wire.ServiceSpec{Executable: "/bin/new", Args: []string{"-v"},
			Environment: []string{"A=1"}, Memory: 2 << 30, Dependency: []string{"TCP:db:1"}},
			[]string{"process_executable", "process_executable_args", "environment", "process_memory_size", "service_dependency"},
			func(t *testing.T, w *Work) {
				if w.Path != "/bin/new" || !reflect.DeepEqual(w.Args, []string{"-v"}) || w.Memory != 2<<30 ||
					w.Env[len(w.Env)-1] != "A=1" || !reflect.DeepEqual(w.Deps, []string{"TCP:db:1"}) {
					t.Errorf("work %+v", w)
				}
			}},
		{"keys not given and not modifiable stay", wire.ServiceSpec{Endpoint: "HTTP:other:1/", Class: "x", LingerMS: 7},
			[]string{"service_request_endpoint", "scheduling_class"}, func(t *testing.T, w *Work) {
				if sp := w.Service.Spec; sp.Endpoint != "HTTP:h:1/" || sp.Class != "" || sp.LingerMS == 7 {
					t.Errorf("spec %+v", sp)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := New()
			apply(t, f, 1, Command{Type: CmdSvcRegister, Time: 1, Work: svcWork("HTTP:h:1/")})
			sp := tc.spec
			res := apply(t, f, 2, Command{Type: CmdSvcChange, Time: 2, WorkID: 1, Service: &ServiceChange{Op: SvcOpModify, Spec: &sp, Keys: tc.keys}})
			if res[0].Err != nil {
				t.Fatal(res[0].Err)
			}
			var w *Work
			f.View(func(v *View) { w = v.Work(1).Copy() })
			tc.check(t, w)
		})
	}
}
