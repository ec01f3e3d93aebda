package agent

import (
	"context"
	"os"
	"strings"
	"time"

	"github.com/ducc-project/ducc/wire"
)

// streamHost is what the agent gives the job streams (package feed): its
// process manager's pipes, logs and stops, and calls to the job driver on
// the head.
type streamHost struct{ a *Agent }

func (h streamHost) Pipes(id string) (string, string)      { return h.a.procs.Pipes(id) }
func (h streamHost) AppendLog(id string) (*os.File, error) { return h.a.procs.AppendLog(id) }

func (h streamHost) Ended(id string) bool {
	st, ok := h.a.procs.Status(id)
	return !ok || st.State.Ended()
}

func (h streamHost) Stop(ctx context.Context, id string, grace time.Duration, why string) {
	h.a.stop(ctx, id, grace, why)
}

func (h streamHost) Exchange(ctx context.Context, req wire.ExchangeRequest, rep *wire.ExchangeReply) error {
	return h.a.callHead(ctx, wire.MethodExchange, wire.Caller{Node: h.a.cfg.Node}, req, rep)
}

func (h streamHost) Driver(ctx context.Context, req wire.DriverRequest, rep *wire.DriverReply) error {
	return h.a.callHead(ctx, wire.MethodDriver, wire.Caller{Node: h.a.cfg.Node}, req, rep)
}

// driverExited finishes the pump of a driver that exited (the head gets
// the driver's last items before it learns of its exit) and adds the last
// lines of the driver's log to the reason of a driver that failed.
func (a *Agent) driverExited(ps *wire.ProcStatus) {
	uid, ok := a.streams.DriverExited(ps.ID)
	if !ok {
		return
	}
	if ps.State != wire.ProcExited || ps.ExitCode != 0 {
		if tail := driverLogTail(ps.LogPath, uid); tail != "" {
			ps.Reason += "; last lines of its log: " + tail
		}
	}
}

// driverLogTail returns the last lines of a driver's log, joined with
// " | ", for the reason of a driver that failed; "" if there is none.
func driverLogTail(path string, uid uint32) string {
	if path == "" {
		return ""
	}
	if e := os.Geteuid(); e != 0 {
		uid = uint32(e)
	}
	f, err := openLog(path, uid)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 2048
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := fi.Size() - max
	if off < 0 {
		off = 0
	}
	buf := make([]byte, max)
	n, _ := f.ReadAt(buf, off)
	lines := strings.Split(strings.TrimSpace(string(buf[:n])), "\n")
	if off > 0 && len(lines) > 1 {
		lines = lines[1:] // a cut first line
	}
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	return strings.TrimSpace(strings.Join(lines, " | "))
}
