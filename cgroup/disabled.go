package cgroup

type disabledBackend struct{}

func (disabledBackend) create(name string, _ Resources) (Group, error) {
	return disabledGroup(name), nil
}
func (disabledBackend) load(name string) (Group, error) { return disabledGroup(name), nil }
func (disabledBackend) removeRoot() error               { return nil }
func (disabledBackend) startIn(_ Group, start func(int) error) error {
	return start(-1)
}

// disabledGroup is a group that does nothing (cgroups disabled).
type disabledGroup string

func (g disabledGroup) Name() string            { return string(g) }
func (g disabledGroup) Path() string            { return "(cgroups disabled)/" + string(g) }
func (disabledGroup) AddProc(int) error         { return nil }
func (disabledGroup) Procs() ([]int, error)     { return nil, nil }
func (disabledGroup) OOMKills() (uint64, error) { return 0, nil }
func (disabledGroup) OOMExact() bool            { return false }
func (disabledGroup) Stats() (Stats, error)     { return Stats{}, ErrDisabled }
func (disabledGroup) Kill() error               { return nil }
func (disabledGroup) Delete() error             { return nil }
func (disabledGroup) Update(Resources) error    { return nil }
func (disabledGroup) OpenFD() (int, error)      { return -1, ErrNoCgroupFD }

// PeakMemory is unknown without cgroups.
func (disabledGroup) PeakMemory() (uint64, error) { return 0, ErrDisabled }
