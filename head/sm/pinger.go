package sm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ducc-project/ducc/spec"
	"github.com/ducc-project/ducc/wire"
)

// maxPingOutput bounds what a custom pinger may print.
const maxPingOutput = 64 << 10

// ping runs one ping: the custom pinger if there is one, else the built-in
// pinger of the endpoint's kind.
func ping(ctx context.Context, p Pinger, st wire.PingState) (Ping, error) {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	if p.Exec != "" {
		return pingCustom(ctx, p, st)
	}
	kind, target, err := spec.ParseEndpoint(p.Endpoint)
	if err != nil {
		return Ping{}, err
	}
	switch kind {
	case spec.EndpointTCP:
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", target)
		if err != nil {
			return Ping{}, fmt.Errorf("tcp ping of %s: %w", target, err)
		}
		c.Close()
		return Ping{Alive: true, Healthy: true, Info: "accepting connections on " + target}, nil
	case spec.EndpointHTTP:
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return Ping{}, fmt.Errorf("http ping: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return Ping{}, fmt.Errorf("http ping: %w", err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxPingOutput))
		resp.Body.Close()
		ok := resp.StatusCode < 400
		return Ping{Alive: resp.StatusCode < 500, Healthy: ok, Info: "HTTP " + resp.Status}, nil
	}
	return Ping{}, fmt.Errorf("endpoint %s needs a custom pinger (service_ping_executable)", p.Endpoint)
}

// pingCustom runs the custom pinger as the service's owner: the ping
// state as JSON on its standard input, one JSON answer on its standard
// output (the last non-empty line counts).
func pingCustom(ctx context.Context, p Pinger, st wire.PingState) (Ping, error) {
	in, err := json.Marshal(st)
	if err != nil {
		return Ping{}, fmt.Errorf("encode ping state: %w", err)
	}
	cmd := exec.CommandContext(ctx, p.Exec, p.Args...)
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	var stdout, stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	home := p.Home
	if home == "" {
		home = "/"
	}
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "USER=" + p.User, "LOGNAME=" + p.User,
		"DUCC_SERVICE_ID=" + strconv.FormatUint(p.Service, 10), "DUCC_SERVICE_ENDPOINT=" + p.Endpoint}, p.Env...)
	if p.Dir != "" {
		if fi, err := os.Stat(p.Dir); err == nil && fi.IsDir() {
			cmd.Dir = p.Dir
		}
	}
	attr := &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() == 0 && p.UID != 0 {
		attr.Credential = &syscall.Credential{Uid: p.UID, Gid: p.GID, Groups: p.Groups}
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 200 * time.Millisecond
	err = cmd.Run()
	if ctx.Err() != nil {
		return Ping{}, fmt.Errorf("pinger %s did not answer within %s", p.Exec, p.Timeout)
	}
	if err != nil {
		return Ping{}, fmt.Errorf("pinger %s: %v: %s", p.Exec, err, lastLine(stderr.String()))
	}
	line := lastLine(stdout.String())
	var a wire.PingAnswer
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		return Ping{}, fmt.Errorf("pinger %s answered %q, not JSON like {\"alive\": true}: %v", p.Exec, truncate(line, 200), err)
	}
	healthy := a.Alive
	if a.Healthy != nil {
		healthy = *a.Healthy
	}
	return Ping{Alive: a.Alive, Healthy: healthy, Info: a.Info, Answer: &a}, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// limitedBuffer keeps the first maxPingOutput bytes written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxPingOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
