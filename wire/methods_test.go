package wire

import (
	"errors"
	"testing"
)

func TestMethodTable(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range Methods() {
		if seen[m.Name] {
			t.Errorf("method %q listed twice", m.Name)
		}
		seen[m.Name] = true
		if m.Callers == 0 || m.NewRequest == nil || m.NewReply == nil {
			t.Errorf("method %q is incomplete: %+v", m.Name, m)
		}
		if m.Callers&FromHead != 0 && m.ToHead() {
			t.Errorf("method %q is served by both the head and the agents", m.Name)
		}
		// Every request and reply type round-trips through the codec.
		for _, v := range []any{m.NewRequest(), m.NewReply()} {
			b, err := Marshal(v)
			if err != nil {
				t.Errorf("%s: marshal %T: %v", m.Name, v, err)
				continue
			}
			if err := Unmarshal(b, v); err != nil {
				t.Errorf("%s: unmarshal %T: %v", m.Name, v, err)
			}
		}
		got, ok := LookupMethod(m.Name)
		if !ok || got.Name != m.Name {
			t.Errorf("LookupMethod(%q) = %+v, %v", m.Name, got, ok)
		}
	}
	if _, ok := LookupMethod("no.such.method"); ok {
		t.Error("an unknown method was found")
	}
	if m, _ := LookupMethod(MethodDesired); m.ToHead() || m.OnSocket() {
		t.Errorf("desired: %+v", m)
	}
	if m, _ := LookupMethod(MethodReport); !m.ToHead() || m.OnSocket() || !m.ReadOnly {
		t.Errorf("report: %+v", m)
	}
}

func TestNotHead(t *testing.T) {
	err := NotHead("n1")
	if ErrorCode(err) != CodeUnreachable || !IsNotHead(err) {
		t.Errorf("NotHead: %v code %d", err, ErrorCode(err))
	}
	// The text survives a trip over the wire, where only the message and
	// code travel.
	if !IsNotHead(&CodedError{Code: CodeUnreachable, Msg: err.Error()}) || IsNotHead(errors.New("other")) || IsNotHead(nil) {
		t.Error("IsNotHead")
	}
}
