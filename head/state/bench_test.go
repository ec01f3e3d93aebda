package state

import (
	"strconv"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/ducc-project/ducc/wire"
)

// BenchmarkApplyShortJob is the life of one short process through the
// state, one log entry per event as the head applies them: submit,
// assign, running, exited. It shows what keeping the indexes costs.
func BenchmarkApplyShortJob(b *testing.B) {
	f := New()
	var idx uint64
	entry := func(cmds ...Command) {
		data, err := Encode(cmds...)
		if err != nil {
			b.Fatal(err)
		}
		idx++
		if res, _ := f.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: data}).([]Result); len(res) != 1 || res[0].Err != nil {
			b.Fatalf("apply: %+v", res)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		id := idx/4 + 1
		pid := strconv.FormatUint(id, 10) + ".1"
		entry(Command{Type: CmdSubmit, Time: 1, Work: &Work{Kind: wire.WorkManaged, User: "alice", Class: "normal", Memory: 1 << 20, Path: "true"}})
		entry(Command{Type: CmdAssign, Time: 2, WorkID: id, Assign: &Assignment{Node: "n" + strconv.Itoa(int(id%10)), Shares: 1}})
		entry(Command{Type: CmdProc, Time: 3, Proc: &wire.ProcStatus{ID: pid, WorkID: id, State: wire.ProcRunning, PID: 7}})
		entry(Command{Type: CmdProc, Time: 4, Proc: &wire.ProcStatus{ID: pid, WorkID: id, State: wire.ProcExited}})
	}
}
