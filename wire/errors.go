package wire

import (
	"errors"
	"fmt"
)

// CodedError is an error with a code. A handler returns one (Errorf) to
// choose the Code of its Response; p2p.Call returns one for every failure,
// so callers can use errors.As to learn the code.
type CodedError struct {
	Code int
	Msg  string
	// Err is the underlying error, if any (on the client side of a call
	// failure that happened locally, e.g. a failed dial).
	Err error
}

// Errorf returns a *CodedError with the given code and formatted message.
// %w verbs are honoured for errors.Is/As.
func Errorf(code int, format string, args ...any) *CodedError {
	err := fmt.Errorf(format, args...)
	return &CodedError{Code: code, Msg: err.Error(), Err: errors.Unwrap(err)}
}

func (e *CodedError) Error() string {
	if e.Msg == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Msg
}

func (e *CodedError) Unwrap() error { return e.Err }

// ErrNotDelivered is in the chain of a p2p.Call error when the request never
// left this host (no stream could be opened), so retrying it elsewhere
// cannot run it twice.
var ErrNotDelivered = errors.New("request not delivered")

// ErrorCode returns the code of the first CodedError in err's chain,
// CodeError for any other non-nil error, and 0 for nil.
func ErrorCode(err error) int {
	if err == nil {
		return 0
	}
	var ce *CodedError
	if errors.As(err, &ce) && ce.Code != 0 {
		return ce.Code
	}
	return CodeError
}

// DecodeBody decodes the body of a request into v (a pointer). An empty
// body leaves v unchanged. Errors have CodeUsage.
func (r *Request) DecodeBody(v any) error {
	if len(r.Body) == 0 {
		return nil
	}
	if err := Unmarshal(r.Body, v); err != nil {
		return Errorf(CodeUsage, "%s: malformed request body: %w", r.Method, err)
	}
	return nil
}
