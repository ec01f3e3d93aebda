package web

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A dashboard with Config.LocalUsers knows a browser on its own node the
// way the agent's socket knows a `ducc` command: the kernel says who owns
// the connection. For a TCP connection over loopback both ends are
// sockets of this machine, and the kernel's socket tables
// (/proc/net/tcp, /proc/net/tcp6) list each socket with the uid of its
// owner (what identd, RFC 1413, answers). The client's end is the row
// whose local address is the request's remote address and whose remote
// address is the address the server accepted it on.

// defaultProcNet is where the kernel's socket tables are.
const defaultProcNet = "/proc/net"

// errNoSocket: the tables list no socket for the connection (it closed,
// or it comes from another network namespace).
var errNoSocket = errors.New("the kernel lists no socket for this connection")

// socketOwner returns the uid owning the client end of the TCP connection
// from client to server, from the socket tables under procNet.
func socketOwner(procNet string, client, server netip.AddrPort) (uint32, error) {
	client = netip.AddrPortFrom(client.Addr().Unmap(), client.Port())
	server = netip.AddrPortFrom(server.Addr().Unmap(), server.Port())
	for _, name := range []string{"tcp", "tcp6"} {
		uid, err := findSocket(filepath.Join(procNet, name), client, server)
		switch {
		case err == nil:
			return uid, nil
		case errors.Is(err, errNoSocket), errors.Is(err, os.ErrNotExist):
			continue
		default:
			return 0, err
		}
	}
	return 0, errNoSocket
}

// findSocket scans one socket table:
//
//	sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid ...
//	 0: 0100007F:A4D1 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0 ...
func findSocket(path string, client, server netip.AddrPort) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 {
			continue
		}
		local, err1 := parseProcAddr(fs[1])
		remote, err2 := parseProcAddr(fs[2])
		if err1 != nil || err2 != nil || local != client || remote != server {
			continue
		}
		uid, err := strconv.ParseUint(fs[7], 10, 32)
		if err != nil {
			return 0, fmt.Errorf("%s: bad uid %q", path, fs[7])
		}
		return uint32(uid), nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return 0, errNoSocket
}

// parseProcAddr decodes an address of the socket tables: the address as
// 32-bit words in the machine's byte order, each printed as 8 hex digits,
// then the port in hex.
func parseProcAddr(s string) (netip.AddrPort, error) {
	h, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("bad socket address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("bad socket port %q", s)
	}
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("bad socket address %q", s)
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}

// connEnds are the two ends of the request's connection: the client's
// (RemoteAddr) and the one the server accepted it on.
func connEnds(r *http.Request) (client, server netip.AddrPort, err error) {
	client, err = netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return client, server, fmt.Errorf("the client's address %q: %w", r.RemoteAddr, err)
	}
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return client, server, errors.New("the server's end of the connection is unknown")
	}
	server, err = netip.ParseAddrPort(la.String())
	if err != nil {
		return client, server, fmt.Errorf("the server's address %q: %w", la, err)
	}
	return client, server, nil
}

// localViewer identifies a loopback client by the user who owns its
// connection (Config.LocalUsers); the error says why it could not.
func (s *server) localViewer(r *http.Request) (viewer, error) {
	if s.cfg.LookupUID == nil {
		return viewer{}, errors.New("this dashboard cannot look users up")
	}
	client, server, err := connEnds(r)
	if err != nil {
		return viewer{}, err
	}
	uid, err := socketOwner(defaultProcNet, client, server)
	if err != nil {
		return viewer{}, err
	}
	c, err := s.cfg.LookupUID(uid)
	if err != nil {
		return viewer{}, err
	}
	return viewer{c: c, via: viaLocal}, nil
}
