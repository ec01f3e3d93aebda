//go:build !cgo

package gpu

import "errors"

// DiscoverHost says there is no NVML library: a build without cgo cannot
// load it (only duccd, built with cgo, discovers GPUs).
func DiscoverHost() Inventory {
	return Inventory{Status: StatusNoLibrary, Err: errors.New("this build has no cgo, so it cannot load libnvidia-ml.so.1")}
}

// OpenHost is DiscoverHost without a reader: a build without cgo cannot
// read GPU memory.
func OpenHost() (MemoryReader, Inventory) { return nil, DiscoverHost() }
