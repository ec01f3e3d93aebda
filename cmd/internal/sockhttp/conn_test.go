package sockhttp

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
)

// conn's errors read as net.Conn's: a read the server cut off by closing
// with the request unread (ECONNRESET on a Unix socket), a write after it,
// and a dial to nothing.
func TestConnErrorsAsNet(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1)
			c.Read(buf) // the first byte; the rest stays unread
			c.Close()
		}
	}()
	type rw interface {
		io.ReadWriteCloser
	}
	errs := func(c rw) (read, write string) {
		defer c.Close()
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		_, rerr := io.ReadAll(c)
		_, werr := c.Write([]byte("again"))
		if rerr == nil || werr == nil {
			t.Fatalf("read %v, write %v: want errors", rerr, werr)
		}
		return rerr.Error(), werr.Error()
	}
	nc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	wantR, wantW := errs(nc)
	c, err := dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	gotR, gotW := errs(c)
	t.Logf("net.Conn: %q, %q", wantR, wantW)
	if gotR != wantR || gotW != wantW {
		t.Errorf("read error %q, write error %q; net.Conn's: %q, %q", gotR, gotW, wantR, wantW)
	}

	none := filepath.Join(dir, "none")
	_, nerr := net.Dial("unix", none)
	_, cerr := dial(context.Background(), none)
	if nerr == nil || cerr == nil || nerr.Error() != cerr.Error() {
		t.Errorf("dial to nothing: %v; net.Dial's: %v", cerr, nerr)
	}
}
