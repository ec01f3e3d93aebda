package gpu

import (
	"strings"
	"testing"
)

func TestParseDeclared(t *testing.T) {
	const gib = int64(1) << 30
	tests := []struct {
		name string
		yaml string
		want []Device
		errs []string // every one must be in the error
	}{
		{
			name: "two GPUs",
			yaml: "- {uuid: GPU-a, model: H100, memory: 80G, minor: 0}\n- {uuid: GPU-b, model: H100, memory: 80GiB, minor: 1}\n",
			want: []Device{{UUID: "GPU-a", Model: "H100", Memory: 80 * gib, Index: 0, Minor: 0},
				{UUID: "GPU-b", Model: "H100", Memory: 80 * gib, Index: 1, Minor: 1}},
		},
		{name: "empty", yaml: "", want: nil},
		{name: "empty list", yaml: "[]", want: []Device{}},
		{
			name: "every mistake at once",
			yaml: "- {uuid: GPU-a, model: H100, memory: 80G, minor: 0}\n- {uuid: GPU-a, model: '', memory: 0, minor: -1}\n- {memory: lots}\n",
			errs: []string{
				"node.gpus[1]: uuid GPU-a is also node.gpus[0]",
				"node.gpus[1]: model is missing",
				`node.gpus[1]: memory "0" is not positive`,
				"node.gpus[1]: minor -1 is negative",
				"node.gpus[2]: uuid is missing",
				`node.gpus[2]: memory: memory size "lots" does not start with a number`,
				"node.gpus[2]: minor is missing",
			},
		},
		{name: "unknown key", yaml: "- {uuid: GPU-a, model: H100, memory: 80G, minor: 0, mem: 3}\n", errs: []string{"node.gpus:", "field mem not found"}},
		{name: "not a list", yaml: "uuid: GPU-a\n", errs: []string{"node.gpus:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDeclared([]byte(tc.yaml))
			if len(tc.errs) > 0 {
				if err == nil {
					t.Fatalf("no error; got %v", got)
				}
				for _, e := range tc.errs {
					if !strings.Contains(err.Error(), e) {
						t.Errorf("error %q does not say %q", err, e)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) || (tc.want != nil && got == nil) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("device %d: %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestDeclare(t *testing.T) {
	zero := 0
	inv, err := Declare([]Declared{{UUID: "GPU-a", Model: "H100", Memory: "80G", Minor: &zero}})
	if err != nil || inv.Status != StatusDeclared || inv.String() != "declared in node.gpus: 1 GPU(s)" {
		t.Fatalf("%v, %v", inv, err)
	}
	if inv, err := Declare(nil); err != nil || inv.Status != StatusNoGPUs {
		t.Fatalf("nothing declared: %v, %v", inv, err)
	}
}

// Whatever the input, ParseDeclared does not panic, and what it accepts
// keeps the rules: unique UUIDs, positive memory, minor ≥ 0.
func FuzzParseDeclared(f *testing.F) {
	f.Add([]byte("- {uuid: GPU-a, model: H100, memory: 80G, minor: 0}\n"))
	f.Add([]byte("- {uuid: a, model: m, memory: 1.5T, minor: 7}\n- {uuid: b, model: m, memory: 512M, minor: 8}\n"))
	f.Add([]byte("- {uuid: a, model: m, memory: -1G, minor: 0}\n"))
	f.Add([]byte("[{uuid: a}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		devs, err := ParseDeclared(data)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, d := range devs {
			if d.UUID == "" || seen[d.UUID] || d.Memory <= 0 || d.Minor < 0 || d.Model == "" {
				t.Fatalf("accepted %+v from %q", d, data)
			}
			seen[d.UUID] = true
		}
	})
}
