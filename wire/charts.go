package wire

// MethodCharts returns the recent history the head samples for the
// dashboard's charts: ChartsRequest → ChartsReply. The history lives in
// the head's memory only (a new head after a failover starts it anew).
const MethodCharts = "charts"

// ChartsRequest asks for the cluster's series and, with Work, one job's.
type ChartsRequest struct {
	Work uint64 `cbor:"1,keyasint,omitempty" json:"work,omitempty"`
}

// ChartsReply holds bounded series of samples, oldest first. The head
// takes a sample every few seconds and thins a full series out (every
// other point) so that a series covers all of its time with a bounded
// number of points.
type ChartsReply struct {
	// Work is the job's progress (nil: no samples of it).
	Work []WorkSample `cbor:"1,keyasint,omitempty" json:"work,omitempty"`
	// Classes is the allocation of each class, in config order.
	Classes []ClassSeries `cbor:"2,keyasint,omitempty" json:"classes,omitempty"`
	// Cluster is the shares used and schedulable over all up nodes.
	Cluster []ClusterSample `cbor:"3,keyasint,omitempty" json:"cluster,omitempty"`
}

// WorkSample is a job's item counts at one time (unix ms).
type WorkSample struct {
	At     int64 `cbor:"1,keyasint" json:"at"`
	Done   int   `cbor:"2,keyasint" json:"done"`
	Failed int   `cbor:"3,keyasint,omitempty" json:"failed,omitempty"`
	Total  int   `cbor:"4,keyasint" json:"total"`
	Procs  int   `cbor:"5,keyasint,omitempty" json:"procs,omitempty"`
}

// ClassSeries is one class's allocation over time.
type ClassSeries struct {
	Class  string        `cbor:"1,keyasint" json:"class"`
	Points []ClassSample `cbor:"2,keyasint" json:"points"`
}

// ClassSample is a class's demand, fair share and allocation (bytes) at
// one time (unix ms).
type ClassSample struct {
	At        int64 `cbor:"1,keyasint" json:"at"`
	Demand    int64 `cbor:"2,keyasint,omitempty" json:"demand,omitempty"`
	FairShare int64 `cbor:"3,keyasint,omitempty" json:"fair_share,omitempty"`
	Allocated int64 `cbor:"4,keyasint,omitempty" json:"allocated,omitempty"`
}

// ClusterSample is the shares used and the schedulable shares of the up
// nodes at one time (unix ms).
type ClusterSample struct {
	At         int64 `cbor:"1,keyasint" json:"at"`
	SharesUsed int   `cbor:"2,keyasint" json:"shares_used"`
	Shares     int   `cbor:"3,keyasint" json:"shares"`
}
