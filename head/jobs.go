package head

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/ducc-project/ducc/head/state"
	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// SubmitJob admits a job (docs/jobs.md) with its first chunk of items.
func (h *Head) SubmitJob(ctx context.Context, c wire.Caller, r wire.SubmitJobRequest) (wire.SubmitReply, error) {
	s := r.Spec
	// ${DefaultBrokerURL} in a dependency is the cluster's UIMA-AS broker,
	// as in the registrations it names (docs/services.md).
	s.ServiceDependency = h.resolveBroker(s.ServiceDependency)
	a := &admission{kind: wire.WorkJob, caller: c, className: s.Class, memory: s.Memory,
		job: &s, items: r.Items, more: r.More, validate: func() error { return spec.ValidateJob(s) },
		gpus: gpuAsk{s.GPUs, s.GPUMemory, s.GPUModel}}
	if err := h.admit(a); err != nil {
		return wire.SubmitReply{}, err
	}
	class, unknown := a.class, a.unknown
	s.Memory = a.memory
	driverClass := ""
	if a.driverClass != nil {
		driverClass = a.driverClass.Name
	}
	spec.JobDefaults(&s)
	s.Class = class.Name
	dir := s.WorkingDirectory
	w := &state.Work{
		Kind: wire.WorkJob, User: c.User, UID: c.UID, GID: c.GID, Groups: c.Groups, Home: c.Home,
		Class: class.Name, Memory: s.Memory, Path: s.Executable, Args: s.Args, Env: jobEnv(c, s),
		Dir: dir, LogDir: h.defaultLogDir(s.LogDirectory, c.Home), Description: s.Description, MachineList: s.MachineList,
		Job: &state.Job{Spec: s, DriverClass: driverClass}, Deps: s.ServiceDependency, Umask: s.Umask,
		ShareGroup: s.ShareGroup, ShareGID: s.ShareGID,
		GPUs: s.GPUs, GPUMemory: s.GPUMemory, GPUModel: s.GPUModel, // each job process's, not the driver's
	}
	if s.WorkerProtocol == wire.ProtocolExec {
		w.Job.Spec.Pipelines = max(s.Pipelines, 1)
	}
	for _, it := range r.Items {
		w.Job.Items = append(w.Job.Items, state.Item{Data: it})
	}
	cmd := state.Command{Type: state.CmdSubmit, Time: h.cfg.Now().UnixMilli(), Work: w, Last: !r.More}
	if len(unknown) > 0 {
		cmd.Completion, cmd.Reason = state.CompletionServicesUnavail, "service not registered: "+strings.Join(unknown, ", ")
	}
	res, err := h.cfg.Apply.Apply(ctx, cmd)
	if err != nil {
		return wire.SubmitReply{}, err
	}
	if len(res) != 1 || res[0].Err != nil {
		return wire.SubmitReply{}, fmt.Errorf("submit: %v", res)
	}
	h.log.Info("job submitted", "job", res[0].ID, "user", c.User, "class", class.Name, "items", len(r.Items), "more", r.More)
	return wire.SubmitReply{ID: res[0].ID}, nil
}

// jobEnv is the environment of a job process: a minimal login-like base,
// then what the spec lists (DUCC passes only what the user asks for).
func jobEnv(c wire.Caller, s wire.JobSpec) []string {
	home := c.Home
	if home == "" {
		home = "/"
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "USER=" + c.User, "LOGNAME=" + c.User,
		"DUCC_PIPELINES=" + strconv.Itoa(max(s.Pipelines, 1))}
	return append(env, s.Environment...)
}
