package sim

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ducc-project/ducc/wire"
	"github.com/ducc-project/ducc/wire/p2p"
)

// work submits n managed reservations (`ducc run` with --detach) through
// the fake hosts to the head's RPC handler, as agents forward their CLI's
// calls, and waits until every one's process was reported Running (the
// report acknowledged by the head), or until a deadline.
func (f *fakes) work(ctx context.Context, n int) (WorkResult, error) {
	var res WorkResult
	if n <= 0 {
		return res, nil
	}
	type sub struct {
		id uint64
		at time.Time
	}
	var (
		mu   sync.Mutex
		subs []sub
		next = make(chan int)
		wg   sync.WaitGroup
	)
	t0 := time.Now()
	for range f.cfg.Submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fh := f.hosts[i%len(f.hosts)]
				users := 50
				caller := wire.Caller{User: fmt.Sprintf("sim%02d", i%users), UID: uint32(20000 + i%users), GID: 20000,
					Node: nodeName(i % f.cfg.Nodes), Home: "/tmp"}
				req := wire.RunRequest{Memory: f.cfg.WorkMemory, Path: "/bin/sleep", Args: []string{"infinity"},
					LogDir: "/tmp/ducc-sim-logs", Description: fmt.Sprintf("sim work %d", i),
					GPUs: f.cfg.WorkGPUs, GPUMemory: f.cfg.WorkGPUMemory}
				var reply wire.SubmitReply
				at := time.Now()
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				err := p2p.Call(cctx, fh.h, f.leaderID(), wire.MethodRun, caller, req, &reply)
				cancel()
				mu.Lock()
				if err != nil {
					res.SubmitErrors++
					if res.FirstError == "" {
						res.FirstError = err.Error()
					}
				} else {
					subs = append(subs, sub{reply.ID, at})
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	res.Submitted = len(subs)
	res.SubmitSeconds = time.Since(t0).Seconds()
	f.log.Info("work submitted", "work", res.Submitted, "errors", res.SubmitErrors, "seconds", res.SubmitSeconds)

	// Wait for Running: generous, since finding where the head gives up is
	// the point of the exercise.
	// Only what fits can run: n beyond the cluster's capacity stays pending.
	expect := min(len(subs), f.cfg.Capacity)
	deadline := time.Now().Add(60*time.Second + time.Duration(n)*10*time.Millisecond)
	var lat []float64
	var last time.Time
	for {
		lat, last = lat[:0], time.Time{}
		f.runMu.Lock()
		for _, s := range subs {
			if at, ok := f.running[s.id]; ok {
				lat = append(lat, float64(at.Sub(s.at).Microseconds())/1000)
				if at.After(last) {
					last = at
				}
			}
		}
		f.runMu.Unlock()
		if len(lat) >= expect || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("waiting for work to run: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	res.Running = len(lat)
	if len(lat) > 0 {
		res.LatencyP50MS, res.LatencyP99MS, res.LatencyMaxMS = quantile(lat, 0.5), quantile(lat, 0.99), quantile(lat, 1)
		res.AllRunningSeconds = last.Sub(t0).Seconds()
	}
	return res, nil
}
