package sockhttp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/textproto"
	"strconv"
	"strings"
)

// Header is a request's extra header fields, name and value, in order.
type Header [][2]string

// Response is an answer from the agent. Body must be closed; closing it
// closes the connection.
type Response struct {
	StatusCode int
	Status     string // "404 Not Found"
	Header     textproto.MIMEHeader
	Body       io.ReadCloser
}

// ErrMalformedRequest is what Do returns, wrapped, for a method, path or
// header field it will not send: the caller's input was wrong, the server
// never saw it.
var ErrMalformedRequest = errors.New("malformed request")

// maxHeaderBytes bounds the status line and header of an answer.
const maxHeaderBytes = 1 << 20

// Do sends one request to the HTTP server on the Unix socket at socket and
// reads the response's status and header. A nil body sends none. The end of
// ctx closes the connection; a read or write it cuts short returns ctx's
// error. A dial error is a *net.OpError.
func Do(ctx context.Context, socket, method, path string, h Header, body []byte) (*Response, error) {
	if err := check(method, path, h); err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	fail := func(err error) (*Response, error) {
		stop()
		conn.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	if _, err := conn.Write(request(method, path, h, body)); err != nil {
		return fail(fmt.Errorf("send %s %s: %w", method, path, err))
	}
	resp, err := ReadResponse(conn, method)
	if err != nil {
		return fail(err)
	}
	resp.Body = &connBody{r: resp.Body, ctx: ctx, conn: conn, stop: stop}
	return resp, nil
}

// check refuses what would not make one well-formed request line and
// header: a method or path with a space or a control character, a header
// field with a colon in its name or a line break anywhere.
func check(method, path string, h Header) error {
	bad := func(s string, also string) bool {
		return s == "" || strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f || strings.ContainsRune(also, r) })
	}
	if bad(method, " ") || bad(path, " ") || path[0] != '/' {
		return fmt.Errorf("%w %q %q", ErrMalformedRequest, trim(method), trim(path))
	}
	for _, kv := range h {
		if bad(kv[0], " :") || strings.ContainsAny(kv[1], "\r\n\x00") {
			return fmt.Errorf("%w: header field %q", ErrMalformedRequest, trim(kv[0]))
		}
	}
	return nil
}

// request renders a request that check accepted.
func request(method, path string, h Header, body []byte) []byte {
	var b bytes.Buffer
	b.Grow(256 + len(body))
	b.WriteString(method)
	b.WriteByte(' ')
	b.WriteString(path)
	b.WriteString(" HTTP/1.1\r\nHost: ducc\r\nConnection: close\r\n")
	for _, kv := range h {
		b.WriteString(kv[0])
		b.WriteString(": ")
		b.WriteString(kv[1])
		b.WriteString("\r\n")
	}
	if body != nil {
		b.WriteString("Content-Type: application/json\r\nContent-Length: ")
		b.WriteString(strconv.Itoa(len(body)))
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

// ReadResponse reads a response to a request with method from r: the
// status line, the header and a reader of the body. Interim (1xx)
// responses are skipped. Malformed input is an error, never a panic.
func ReadResponse(r io.Reader, method string) (*Response, error) {
	lr := &io.LimitedReader{R: r, N: maxHeaderBytes}
	br := bufio.NewReader(lr)
	tp := textproto.NewReader(br)
	for {
		resp, err := readHead(tp)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 200 {
			continue
		}
		lr.N = math.MaxInt64 // the header was bounded, the body is not
		if resp.Body, err = bodyReader(resp, method, br); err != nil {
			return nil, err
		}
		return resp, nil
	}
}

// readHead reads a status line and a header.
func readHead(tp *textproto.Reader) (*Response, error) {
	line, err := tp.ReadLine()
	if err != nil {
		return nil, fmt.Errorf("read the answer's status line: %w", noEOF(err))
	}
	proto, status, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") || len(status) < 3 {
		return nil, fmt.Errorf("malformed status line %q", trim(line))
	}
	code, err := strconv.Atoi(status[:3])
	if err != nil || code < 100 || code > 999 || (len(status) > 3 && status[3] != ' ') {
		return nil, fmt.Errorf("malformed status line %q", trim(line))
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, fmt.Errorf("read the answer's header: %w", noEOF(err))
	}
	return &Response{StatusCode: code, Status: status, Header: h}, nil
}

// bodyReader picks how the body ends: not at all (HEAD, 204, 304), the
// chunked coding, Content-Length, or the end of the connection.
func bodyReader(resp *Response, method string, br *bufio.Reader) (io.ReadCloser, error) {
	if method == "HEAD" || resp.StatusCode == 204 || resp.StatusCode == 304 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	if te := resp.Header.Values("Transfer-Encoding"); len(te) > 0 {
		if len(te) != 1 || !strings.EqualFold(strings.TrimSpace(te[0]), "chunked") {
			return nil, fmt.Errorf("unsupported transfer coding %q", trim(strings.Join(te, ", ")))
		}
		return io.NopCloser(&chunkedReader{r: br}), nil
	}
	if cl := resp.Header.Values("Content-Length"); len(cl) > 0 {
		n, err := strconv.ParseInt(strings.TrimSpace(cl[0]), 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("malformed Content-Length %q", trim(cl[0]))
		}
		for _, v := range cl[1:] {
			if strings.TrimSpace(v) != strings.TrimSpace(cl[0]) {
				return nil, fmt.Errorf("conflicting Content-Length %q and %q", trim(cl[0]), trim(v))
			}
		}
		return io.NopCloser(&exactReader{r: br, n: n}), nil
	}
	return io.NopCloser(br), nil
}

// exactReader reads n bytes; an end before them is io.ErrUnexpectedEOF.
type exactReader struct {
	r io.Reader
	n int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.n {
		p = p[:e.n]
	}
	n, err := e.r.Read(p)
	e.n -= int64(n)
	if err == io.EOF && e.n > 0 {
		err = io.ErrUnexpectedEOF
	} else if err == io.EOF {
		err = nil
	}
	return n, err
}

// chunkedReader decodes the chunked transfer coding (RFC 9112, 7.1): hex
// sizes with optional extensions, each chunk followed by CRLF, a last chunk
// of size 0 and an optional trailer ending in an empty line.
type chunkedReader struct {
	r        *bufio.Reader
	n        int64 // left in the current chunk
	needCRLF bool  // a chunk's data was read, its CRLF not yet
	err      error
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.n == 0 {
		if err := c.next(); err != nil {
			c.err = err
			return 0, err
		}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		c.err = fmt.Errorf("chunked body: %w", err)
		return n, c.err
	}
	return n, nil
}

// next reads up to the next chunk's data; at the last chunk it reads the
// trailer and returns io.EOF.
func (c *chunkedReader) next() error {
	if c.needCRLF {
		var crlf [2]byte
		if _, err := io.ReadFull(c.r, crlf[:]); err != nil {
			return fmt.Errorf("chunked body: %w", noEOF(err))
		}
		if crlf != [2]byte{'\r', '\n'} {
			return errors.New("chunked body: no CRLF after a chunk")
		}
		c.needCRLF = false
	}
	line, err := c.line()
	if err != nil {
		return err
	}
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i] // chunk extensions mean nothing to us
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 || len(line) > 16 {
		return fmt.Errorf("chunked body: malformed chunk size %q", trim(string(line)))
	}
	size, err := strconv.ParseUint(string(line), 16, 63)
	if err != nil {
		return fmt.Errorf("chunked body: malformed chunk size %q", trim(string(line)))
	}
	if size == 0 {
		for { // the trailer: fields we do not use, up to an empty line
			l, err := c.line()
			if err != nil {
				return err
			}
			if len(l) == 0 {
				return io.EOF
			}
		}
	}
	c.n, c.needCRLF = int64(size), true
	return nil
}

// line reads one line of the chunked coding without its CR LF; a line
// longer than the reader's buffer is an error.
func (c *chunkedReader) line() ([]byte, error) {
	l, err := c.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errors.New("chunked body: line too long")
	}
	if err != nil {
		return nil, fmt.Errorf("chunked body: %w", noEOF(err))
	}
	l = l[:len(l)-1]
	if n := len(l); n > 0 && l[n-1] == '\r' {
		l = l[:n-1]
	}
	return l, nil
}

// connBody is a response body that closes its connection with it. A read
// cut short by the end of the request's context returns the context's
// error.
type connBody struct {
	r    io.ReadCloser
	ctx  context.Context
	conn net.Conn
	stop func() bool
}

func (b *connBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr
		}
	}
	return n, err
}

func (b *connBody) Close() error {
	b.stop()
	b.r.Close()
	return b.conn.Close()
}

// noEOF turns the end of the connection in the middle of an answer into
// io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// trim shortens what goes into an error message.
func trim(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
