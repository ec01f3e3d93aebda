package head

import (
	"context"
	"fmt"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// RunManaged admits a managed reservation: one process, FIXED_SHARE.
func (h *Head) RunManaged(ctx context.Context, c wire.Caller, r wire.RunRequest) (wire.SubmitReply, error) {
	a := &admission{kind: wire.WorkManaged, caller: c, className: r.Class, memory: r.Memory,
		gpus:     gpuAsk{r.GPUs, r.GPUMemory, r.GPUModel},
		validate: func() error { return spec.ValidateRun(r) }}
	if err := h.admit(a); err != nil {
		return wire.SubmitReply{}, err
	}
	class, mem := a.class, a.memory
	w := &state.Work{
		Kind: wire.WorkManaged, User: c.User, UID: c.UID, GID: c.GID, Groups: c.Groups, Home: c.Home,
		Class: class.Name, Memory: mem, Path: r.Path, Args: r.Args, Env: r.Env, Dir: r.Dir,
		LogDir: h.defaultLogDir(r.LogDir, c.Home), Description: r.Description, MachineList: r.MachineList, Umask: r.Umask,
		ShareGroup: r.ShareGroup, ShareGID: r.ShareGID,
		GPUs: r.GPUs, GPUMemory: r.GPUMemory, GPUModel: r.GPUModel,
		State: state.StateWaitingForResources,
	}
	// The orchestrator places it in the same log entry when it can.
	res, err := h.orch.Submit(ctx, state.Command{Type: state.CmdSubmit, Time: h.cfg.Now().UnixMilli(), Work: w})
	if err != nil {
		return wire.SubmitReply{}, err
	}
	if len(res) != 1 || res[0].Err != nil {
		return wire.SubmitReply{}, fmt.Errorf("submit: %v", res)
	}
	h.log.Info("managed reservation submitted", "work", res[0].ID, "user", c.User, "memory", mem)
	return wire.SubmitReply{ID: res[0].ID}, nil
}
