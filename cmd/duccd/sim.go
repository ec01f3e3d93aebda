package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/ducc-project/ducc/cmd/internal/cli"
	"github.com/ducc-project/ducc/sim"
)

// Sim runs `ducc sim`.
func (daemon) Sim(ctx context.Context, o cli.SimOptions, asJSON bool, w io.Writer) error {
	res, err := sim.Run(ctx, sim.Options(o))
	if err != nil {
		return cli.Failf("%v", err)
	}
	if asJSON {
		err = cli.PrintJSON(w, res)
	} else {
		err = sim.WriteTable(w, res)
	}
	if err == nil && res.Failover != nil {
		switch {
		case !res.Failover.Held():
			return cli.Failf("the failover lost nodes or work (see the failover figures)")
		case res.Failover.Stopped > 0 || res.Work.HeadRunning < res.Work.Running:
			return cli.Failf("the first head lost nodes or work before the failover (see the work figures)")
		}
	}
	return err
}

// SimFakes runs `ducc sim --fakes-only`, the fakes process of a simulation.
func (daemon) SimFakes(ctx context.Context, in io.Reader, out io.Writer, logger *slog.Logger) error {
	if err := sim.ServeFakes(ctx, in, out, logger); err != nil {
		return cli.Failf("%v", err)
	}
	return nil
}
