package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

func newRunCmd(g *globals) *cobra.Command {
	var specFlag string
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "run one process on the cluster (a managed reservation), output attached",
		Long: `Run any command as you on a node of the cluster, inside a memory cgroup capped at
the requested memory rounded up to whole shares. Output is streamed back and the
exit code of 'ducc run' is the process's; 137 when the memory cap was hit, also
when the OOM killer killed only a child of the process and it exited 0 (the
reason is printed). Ctrl-C cancels it. With --detach, print the id and return at
once; 'ducc wait ID' gives the exit code later.`,
		Example: "  ducc run -- hostname\n  ducc run --memory 512M -- python3 train.py\n  id=$(ducc run --detach -- sleep 600)",
		RunE: func(cmd *cobra.Command, args []string) error {
			wd, _ := os.Getwd()
			raw := spec.Raw{}
			if specFlag != "" {
				var warn []string
				var err error
				if raw, warn, err = spec.ParseFile(specFlag, spec.KindRun); err != nil {
					return usageErr("%v", err)
				}
				printWarnings(cmd, warn)
			}
			if err := spec.FlagValues(cmd.Flags(), spec.KindRun, raw, wd); err != nil {
				return usageErr("%v", err)
			}
			run, err := spec.BuildRun(raw)
			if err != nil {
				return usageErr("%v", err)
			}
			req := run.Req
			switch {
			case len(args) > 0 && run.Executable != "":
				return usageErr("%s names the command (process_executable); give no command after '--' as well", specFlag)
			case len(args) > 0:
				req.Path, req.Args = args[0], args[1:]
			case run.Executable != "":
				req.Path, req.Args = run.Executable, run.Args
			default:
				return usageErr("give the command to run after '--', e.g. 'ducc run -- hostname', or a spec file with process_executable (--specification FILE)")
			}
			req.Env = append(os.Environ(), spec.ExpandEnv(run.Environment, os.Environ())...)
			if req.Dir == "" {
				req.Dir = wd
			}
			if req.Umask == "" {
				req.Umask = callerUmask()
			}
			if req.ShareGID, err = shareGID(req.ShareGroup); err != nil {
				return err
			}
			if err := spec.ValidateRun(req); err != nil {
				return usageErr("%v", err)
			}
			c := newClient(g)
			ctx := cmd.Context()
			if run.Detach {
				var rep wire.SubmitReply
				if err := c.call(ctx, wire.MethodRun, req, &rep); err != nil {
					return err
				}
				if g.json {
					return printJSON(cmd.OutOrStdout(), rep)
				}
				fmt.Fprintln(cmd.OutOrStdout(), rep.ID)
				return nil
			}
			return attach(ctx, c, req, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	spec.AddFlags(f, spec.KindRun, nil)
	f.StringVarP(&specFlag, "specification", "f", "", "managed reservation spec file (DUCC's process_executable, process_memory_size, ...)")
	for _, name := range []string{"wait-for-completion", "cancel-on-interrupt", "attach-console"} {
		f.Bool(name, false, "accepted for DUCC compatibility: ducc run waits, cancels on Ctrl-C and shows the output unless --detach")
		_ = f.MarkHidden(name)
	}
	return cmd
}

// attach submits, streams output and turns the final state into an exit
// code. Ctrl-C cancels the work and waits for it to stop.
func attach(ctx context.Context, c *client, req wire.RunRequest, stdout, stderr io.Writer) error {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	var id uint64
	var final *wire.WorkInfo
	stopSig := make(chan struct{})
	defer close(stopSig)
	go func() {
		for {
			select {
			case <-stopSig:
				return
			case <-sig:
				if id != 0 {
					fmt.Fprintf(stderr, "ducc: canceling %d\n", id)
					cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					var info wire.WorkInfo
					_ = c.call(cctx, wire.MethodCancel, wire.CancelRequest{ID: id}, &info)
					cancel()
				}
			}
		}
	}()
	err := c.stream(ctx, "POST", wire.PathRunAttach, req, func(ev wire.AttachEvent) error {
		switch {
		case ev.ID != 0:
			id = ev.ID
		case len(ev.Output) > 0:
			_, err := stdout.Write(ev.Output)
			return err
		case ev.Notice != "":
			fmt.Fprintln(stderr, "ducc: "+ev.Notice)
		case ev.Error != nil:
			return &exitError{code: ev.Error.Code, msg: ev.Error.Error}
		case ev.Work != nil:
			final = ev.Work
		}
		return nil
	})
	if err != nil {
		return err
	}
	if final == nil {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("lost track of %d; see 'ducc show %d'", id, id)}
	}
	return workExit(final, stderr)
}

// workExit turns how a managed reservation ended into an exit code and a
// message: the process's own code when it ran; wire.CodeMemoryCap when it
// exited 0 but the OOM killer killed processes of its tree at the cap.
func workExit(w *wire.WorkInfo, stderr io.Writer) error {
	if !w.Ended {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("%d is still %s", w.ID, w.State)}
	}
	switch w.Completion {
	case string(wire.CompletionProgramExit), string(wire.CompletionEndOfJob):
		kills := oomKills(w)
		if w.Reason != "" && (w.ExitCode != 0 || kills > 0) {
			fmt.Fprintf(stderr, "ducc: %d %s\n", w.ID, w.Reason)
		}
		switch {
		case w.ExitCode != 0:
			return &exitError{code: exitCode(w.ExitCode)}
		case kills > 0:
			return &exitError{code: wire.CodeMemoryCap}
		}
		return nil
	default:
		msg := fmt.Sprintf("%d ended %s", w.ID, w.Completion)
		if w.Reason != "" {
			msg += ": " + w.Reason
		}
		code := exitFailed
		if len(w.Procs) > 0 && w.Procs[len(w.Procs)-1].PID != 0 && w.ExitCode != 0 {
			code = exitCode(w.ExitCode)
		}
		return &exitError{code: code, msg: msg}
	}
}

// oomKills counts the OOM kills in the trees of w's processes.
func oomKills(w *wire.WorkInfo) uint64 {
	var n uint64
	for _, p := range w.Procs {
		n += p.OOMKills
	}
	return n
}

// exitCode maps a process exit code to ours: negative (signal) codes
// follow the shell's 128+n convention elsewhere, so clamp to 1..255.
func exitCode(c int) int {
	if c <= 0 || c > 255 {
		return exitFailed
	}
	return c
}
