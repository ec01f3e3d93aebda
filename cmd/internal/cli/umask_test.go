package cli

import (
	"syscall"
	"testing"
)

// callerUmask reports the umask and leaves it as it was.
func TestCallerUmask(t *testing.T) {
	saved := syscall.Umask(0o022)
	defer syscall.Umask(saved)
	for _, tc := range []struct {
		mask int
		want string
	}{
		{0o022, "0022"},
		{0o077, "0077"},
		{0o002, "0002"},
		{0, "0000"},
		{0o777, "0777"},
	} {
		syscall.Umask(tc.mask)
		if got := callerUmask(); got != tc.want {
			t.Errorf("with umask %04o: callerUmask() = %q, want %q", tc.mask, got, tc.want)
		}
		if now := syscall.Umask(tc.mask); now != tc.mask {
			t.Errorf("callerUmask left the umask %04o, was %04o", now, tc.mask)
		}
	}
}
