//go:build !linux

package cli

// fionread is the ioctl that tells how many bytes wait on a pipe, socket
// or terminal: FIONREAD, _IOR('f', 127, int) on macOS and the BSDs (x/sys
// does not name it there).
const fionread = 0x4004667f
