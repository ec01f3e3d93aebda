package head

import (
	"time"

	"github.com/ducc-project/ducc/wire"
)

// SampleCharts takes one round of chart samples at now, as the term's
// ticker does.
func (h *Head) SampleCharts(now time.Time) { h.sampleOnce(now) }

// OnAdmissionCheck has f told of each admission check a submission
// visits, in order.
func (h *Head) OnAdmissionCheck(f func(kind wire.WorkKind, check string)) { h.admitVisit = f }

// AdmissionChecks names the admission checks, in order.
func AdmissionChecks() []string {
	out := make([]string, len(admissionChecks))
	for i, ck := range admissionChecks {
		out[i] = ck.name
	}
	return out
}
