package cli

import "golang.org/x/sys/unix"

// fionread is the ioctl that tells how many bytes wait on a pipe, socket
// or terminal (FIONREAD; Linux calls it TIOCINQ).
const fionread = unix.TIOCINQ
