package sockhttp

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// conn is a connection to a Unix socket on a blocking file descriptor:
// reads and writes are plain system calls. A CLI makes one request and
// waits for its answer, so the runtime's network poller, which net.Dial
// sets up (an epoll instance, an eventfd, three epoll_ctl calls, two
// waits, getsockname and getpeername), is work without a use; its errors
// read as net.Conn's do.
type conn struct {
	f      *os.File
	socket string
}

// dial connects to the Unix socket at socket. Its error is a *net.OpError,
// as net.Dial's is.
func dial(ctx context.Context, socket string) (*conn, error) {
	raddr := &net.UnixAddr{Name: socket, Net: "unix"}
	if err := ctx.Err(); err != nil {
		return nil, &net.OpError{Op: "dial", Net: "unix", Addr: raddr, Err: err}
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "unix", Addr: raddr, Err: os.NewSyscallError("socket", err)}
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: socket})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, &net.OpError{Op: "dial", Net: "unix", Addr: raddr, Err: os.NewSyscallError("connect", err)}
	}
	return &conn{f: os.NewFile(uintptr(fd), socket), socket: socket}, nil
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	if err != nil && err != io.EOF {
		err = c.opError("read", err)
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	n, err := c.f.Write(p)
	if err != nil {
		err = c.opError("write", err)
	}
	return n, err
}

// shutdown ends the connection both ways: a read or write blocked in
// another goroutine returns (closing the descriptor would not wake it).
func (c *conn) shutdown() {
	if rc, err := c.f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
	}
}

// Close shuts the connection down, then closes it.
func (c *conn) Close() error {
	c.shutdown()
	return c.f.Close()
}

// opError is err as net.Conn's Read and Write return it, e.g.
// "read unix @->/run/ducc/ducc.sock: connection reset by peer".
func (c *conn) opError(op string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = os.NewSyscallError(op, pe.Err)
	}
	var laddr net.Addr
	if rc, cerr := c.f.SyscallConn(); cerr == nil {
		_ = rc.Control(func(fd uintptr) {
			if sa, serr := syscall.Getsockname(int(fd)); serr == nil {
				if u, ok := sa.(*syscall.SockaddrUnix); ok {
					laddr = &net.UnixAddr{Name: u.Name, Net: "unix"}
				}
			}
		})
	}
	return &net.OpError{Op: op, Net: "unix", Source: laddr, Addr: &net.UnixAddr{Name: c.socket, Net: "unix"}, Err: err}
}
