// Package statetest helps test code that applies commands to the head's
// state: Applier applies them straight to an FSM, as a one-node Raft would.
package statetest

import (
	"context"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/head/state"
)

// Applier applies commands to FSM in order, one log entry per call.
type Applier struct {
	FSM *state.FSM

	mu    sync.Mutex
	index uint64
}

// Apply encodes the commands as one entry and applies it.
func (a *Applier) Apply(_ context.Context, cmds ...state.Command) ([]state.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	data, err := state.Encode(cmds...)
	if err != nil {
		return nil, err
	}
	a.index++
	res, _ := a.FSM.Apply(&raft.Log{Index: a.index, Type: raft.LogCommand, Data: data}).([]state.Result)
	return res, nil
}

// Applied returns how many entries were applied.
func (a *Applier) Applied() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.index
}
