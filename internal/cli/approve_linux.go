//go:build linux

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// keyMode puts the terminal in a mode of its own for a question: no echo, one
// key at a time, Ctrl-C a key (an answer), not a signal; typeahead meant for the
// command is discarded. restore puts back the mode it found.
func keyMode(tty *os.File) (restore func(), err error) {
	fd := int(tty.Fd())
	mode, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, os.NewSyscallError("TCGETS", err)
	}
	ask := *mode
	ask.Lflag &^= unix.ICANON | unix.ECHO | unix.ISIG | unix.IEXTEN
	ask.Iflag &^= unix.IXON | unix.ICRNL
	ask.Oflag |= unix.OPOST | unix.ONLCR
	ask.Cc[unix.VMIN], ask.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETSW, &ask); err != nil {
		return nil, os.NewSyscallError("TCSETS", err)
	}
	_ = unix.IoctlSetInt(fd, unix.TCFLSH, unix.TCIFLUSH)
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETSW, mode) }, nil
}

// drainInput discards what arrives at the terminal until it has been quiet for
// a tenth of a second (at most about a second): the rest of a burst.
func drainInput(tty *os.File) {
	fd := int(tty.Fd())
	mode, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return
	}
	quiet := *mode
	quiet.Lflag &^= unix.ICANON // VMIN and VTIME count only outside line mode
	quiet.Cc[unix.VMIN], quiet.Cc[unix.VTIME] = 0, 1
	if unix.IoctlSetTermios(fd, unix.TCSETS, &quiet) != nil {
		return
	}
	defer unix.IoctlSetTermios(fd, unix.TCSETS, mode)
	var buf [256]byte
	for range 10 {
		if n, err := tty.Read(buf[:]); err != nil || n == 0 {
			return
		}
	}
}
