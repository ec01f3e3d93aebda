package head

import (
	"testing"

	"github.com/ducc-project/ducc/web"
)

// The scheduler's explanations, as head/rm writes them, sort into the
// reason codes of ducc_work_pending.
func TestReasonCode(t *testing.T) {
	for _, tc := range []struct{ prose, want string }{
		{"waiting for resources: class normal fair share is 0 processes because pool default has no room left for priority 10 work (it is held by higher-priority work)", web.ReasonPriority},
		{"waiting for resources: class normal fair share is 0 processes because pool default's 8 GiB is split among classes by weight, class normal gets 2 GiB shared by 3 user(s), and user bob's 512 MiB is less than one 1 GiB process", web.ReasonFairShare},
		{"waiting for resources: class normal fair share is 0 processes because user bob's share of class normal (1 GiB) goes to their older jobs", web.ReasonFairShare},
		{"waiting for resources: fair share is 4 processes, has 2; no node in pool default has 2 GiB free", web.ReasonResources},
		{"waiting for resources: no node in pool default has 4 GiB free and none can be freed by evicting preemptable work", web.ReasonResources},
		{"waiting for resources: every 16 GiB machine in pool default is busy with work that cannot be evicted", web.ReasonResources},
		{"waiting for preemptions: space held on n1", web.ReasonPreemption},
		{"shrinking: 2 process(es) stopped this cycle: over fair share: class normal fair share is 2 processes, job holds 4; space goes to job 7", web.ReasonPreemption},
		{"at fair share: class normal fair share gives this job 2 of the 8 processes it wants (user bob's share is 2 GiB of the class's 4 GiB)", web.ReasonFairShare},
		{"over fair share: holds 4 processes, fair share is 2; the excess is taken back gradually when other work needs the space", web.ReasonFairShare},
		{"deferred: allotment of 8 GiB exceeded (user bob holds 8 GiB in class fixed; this needs 1 GiB more)", web.ReasonLimit},
		{"no node can hold 64 GiB; largest schedulable is 16 GiB", web.ReasonSize},
		{"no node in pool big has 64 GiB; largest schedulable there is 32 GiB", web.ReasonSize},
		{"no machine in pool default has exactly 8 GiB (reservations get exactly their size); machines: 2 × 16 GiB", web.ReasonSize},
		{"waiting for services: CUSTOM:web", web.ReasonServices},
		{`unknown class "gone"; classes are: normal, fixed`, web.ReasonClass},
		{"something new", web.ReasonOther},
	} {
		if got := reasonCode(tc.prose); got != tc.want {
			t.Errorf("reasonCode(%q) = %s, want %s", tc.prose, got, tc.want)
		}
	}
}
