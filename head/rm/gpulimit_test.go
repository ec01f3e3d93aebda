package rm

import (
	"strings"
	"testing"
)

func TestCheckGPULimits(t *testing.T) {
	cl := &Class{Name: "gpu", Limits: []Limit{{User: "alice", MaxGPUs: 4}, {Group: "ml", MaxGPUs: 6}, {User: "bob", MaxJobs: 3}}}
	tests := []struct {
		name   string
		user   string
		groups []string
		gpus   int
		usage  Usage
		want   string // "" admitted; else words of the refusal
	}{
		{"nothing asked", "alice", nil, 0, Usage{User: Tally{GPUs: 9}}, ""},
		{"within the user's", "alice", nil, 2, Usage{User: Tally{GPUs: 2}}, ""},
		{"over the user's", "alice", nil, 3, Usage{User: Tally{GPUs: 2}}, "user alice would hold 5 of at most 4 GPUs (max_gpus)"},
		{"over the group's", "carol", []string{"ml"}, 2, Usage{Groups: map[string]Tally{"ml": {GPUs: 5}}}, "group ml would hold 7 of at most 6 GPUs"},
		{"no GPU limit", "bob", nil, 50, Usage{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := cl.CheckGPULimits(tc.user, tc.groups, tc.gpus, tc.usage)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	c := DefaultConfig()
	c.Classes[0].Limits = []Limit{{User: "alice", MaxGPUs: -1}}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "max_gpus must not be negative") {
		t.Fatalf("negative max_gpus: %v", err)
	}
}
