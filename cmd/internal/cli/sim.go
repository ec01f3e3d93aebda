package cli

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ducc-project/ducc/units"
)

func newSimCmd(g *globals) *cobra.Command {
	var (
		o                       SimOptions
		nodeMemory, workMemory  string
		nodeGPUs, workGPUMemory string
		logLevel, cpuProfile    string
		fakesOnly, inProcess    bool
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "simulate a large cluster against a real head and measure the head",
		Long: `Start a real head in this process (Raft on bbolt in a temporary directory, the
orchestrator and the Resource Manager, on a libp2p host on loopback) and
--nodes fake agents in a child process that speak the real protocol to it:
heartbeats on gossipsub, desired-state pushes over RPC, process reports and
acknowledgements. After the nodes have joined, measure an idle window, submit
--work managed reservations through the head's RPC handler, then measure a
busy window. Reports head CPU and RSS, heartbeats handled per second,
desired-state pushes, scheduling cycles and submit-to-Running latency.

With --heads N the process runs N head candidates, each with its own libp2p
host and data directory, as one head group. --failover then stops the
leading head hard once the work runs and measures the election and the new
head: time to a new head, nodes it declares down, processes it writes off,
heartbeat lag; the command exits non-zero if any node went down or any
process was written off, before the failover or after it.

Fake nodes run nothing: a wanted process is Running at once (and ends after
--run-for, if set). Many fake nodes share one libp2p host (--nodes-per-host).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := g.needDaemon("ducc sim")
			if err != nil {
				return err
			}
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
				return usageErr("bad --log-level %q: use debug, info, warn or error", logLevel)
			}
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if fakesOnly {
				return d.SimFakes(ctx, os.Stdin, os.Stdout, logger)
			}
			for _, s := range []struct {
				flag string
				in   string
				out  *int64
			}{{"--node-memory", nodeMemory, &o.NodeMemory}, {"--work-memory", workMemory, &o.WorkMemory}} {
				if s.in == "" {
					continue
				}
				m, err := units.ParseSize(s.in)
				if err != nil {
					return usageErr("bad %s %q: %v", s.flag, s.in, err)
				}
				*s.out = int64(m)
			}
			if o.NodeGPUs, o.NodeGPUMemory, err = parseNodeGPUs(nodeGPUs); err != nil {
				return usageErr("bad --node-gpus: %v", err)
			}
			if workGPUMemory != "" {
				m, err := units.ParseSize(workGPUMemory)
				if err != nil || m <= 0 {
					return usageErr("bad --work-gpu-memory %q: give a positive size, like 20G", workGPUMemory)
				}
				o.WorkGPUMemory = int64(m)
			}
			if o.Nodes < 1 {
				return usageErr("--nodes must be at least 1")
			}
			switch {
			case o.Work == 0:
				o.Work = -1 // --work 0 means none
			case o.Work < 0:
				o.Work = o.Nodes
			}
			if !inProcess {
				exe, err := os.Executable()
				if err != nil {
					return &exitError{code: exitFailed, msg: "find own executable for the fakes process: " + err.Error()}
				}
				o.FakesCommand = []string{exe, "sim", "--fakes-only", "--log-level", logLevel}
			}
			o.Logger = logger
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return &exitError{code: exitFailed, msg: "cpu profile: " + err.Error()}
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return &exitError{code: exitFailed, msg: "cpu profile: " + err.Error()}
				}
				defer pprof.StopCPUProfile()
			}
			return d.Sim(ctx, o, g.json, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Nodes, "nodes", 1000, "number of fake nodes")
	f.IntVar(&o.NodesPerHost, "nodes-per-host", 250, "fake nodes sharing one libp2p host")
	f.DurationVar(&o.Duration, "duration", 10*time.Second, "length of each measurement window (idle, busy)")
	f.DurationVar(&o.Heartbeat, "heartbeat", time.Second, "heartbeat interval of each fake node")
	f.StringVar(&nodeMemory, "node-memory", "32G", "schedulable memory of each fake node")
	f.IntVar(&o.Work, "work", -1, "managed reservations to submit after the idle window (default: --nodes; 0: none)")
	f.StringVar(&workMemory, "work-memory", "", "memory of each managed reservation (default: --node-memory, so that --work = --nodes fills the cluster)")
	f.StringVar(&nodeGPUs, "node-gpus", "", "GPUs of each fake node: a count and a size, like 8x80G (default none)")
	f.IntVar(&o.WorkGPUs, "work-gpus", 0, "whole GPUs each managed reservation asks for (needs --node-gpus)")
	f.StringVar(&workGPUMemory, "work-gpu-memory", "", "a slice of one GPU's memory each managed reservation asks for, like 20G (needs --node-gpus)")
	f.DurationVar(&o.RunFor, "run-for", 0, "end each fake process after this long (0: run until the end)")
	f.IntVar(&o.Submitters, "submitters", 16, "submissions in flight at once")
	f.DurationVar(&o.NodeTimeout, "node-timeout", 10*time.Second, "the head's node timeout")
	f.IntVar(&o.MaxHeartbeatsPerSecond, "max-heartbeats-per-second", 2000, "the head's heartbeat intake bound: it stretches the interval it announces beyond that (negative: never)")
	f.BoolVar(&o.SubscribeHeartbeats, "agents-subscribe", false, "fake hosts subscribe to the heartbeat topic, as every agent does today (gossipsub then delivers every heartbeat to every host)")
	f.IntVar(&o.Heads, "heads", 0, "head candidates in one head group (default 1, or 3 with --failover)")
	f.BoolVar(&o.Failover, "failover", false, "stop the leading head once the work runs and measure the new head; exit non-zero if it declared a node down or wrote off a process")
	f.DurationVar(&o.Elect, "election-timeout", 500*time.Millisecond, "the head group's Raft heartbeat and election timeout (head.election_timeout)")
	f.BoolVar(&inProcess, "in-process", false, "run the fake agents in the head's process (head figures then include them)")
	f.StringVar(&logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	f.BoolVar(&fakesOnly, "fakes-only", false, "internal: be the fakes process of a simulation (JSON lines on stdin/stdout)")
	_ = f.MarkHidden("fakes-only")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write the head process's CPU profile of the whole run to this file (go tool pprof)")
	return cmd
}

// ParseNodeGPUs reads --node-gpus: a count and a size, "8x80G" (eight
// GPUs of 80 GiB each); "" or "0" is none.
func parseNodeGPUs(s string) (n int, mem int64, err error) {
	if s == "" || s == "0" {
		return 0, 0, nil
	}
	count, size, ok := strings.Cut(strings.ToLower(s), "x")
	if ok {
		n, err = strconv.Atoi(count)
	}
	if !ok || err != nil || n < 1 {
		return 0, 0, fmt.Errorf("node GPUs %q: give a count and a size, like 8x80G", s)
	}
	m, err := units.ParseSize(size)
	if err != nil || m <= 0 {
		return 0, 0, fmt.Errorf("node GPUs %q: the size after x is not a positive size, like 80G", s)
	}
	return n, int64(m), nil
}
