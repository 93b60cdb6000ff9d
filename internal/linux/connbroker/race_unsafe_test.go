//go:build linux

package connbroker_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// raceProbe connects to an address whose port another thread flips between the allowed and
// the forbidden listener's, as fast as it can, and counts the outcomes.
func raceProbe() string {
	allowed := netip.MustParseAddrPort(os.Getenv("ALLOWED"))
	forbidden := netip.MustParseAddrPort(os.Getenv("FORBIDDEN"))
	// struct sockaddr_in in four words; the first holds sin_family and sin_port.
	buf := make([]uint32, 4)
	word := func(port uint16) uint32 {
		var b [4]byte
		binary.NativeEndian.PutUint16(b[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], port)
		return binary.NativeEndian.Uint32(b[:])
	}
	a4 := allowed.Addr().As4()
	buf[1] = binary.NativeEndian.Uint32(a4[:])
	good, bad := word(allowed.Port()), word(forbidden.Port())
	atomic.StoreUint32(&buf[0], good)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for !stop.Load() {
			atomic.StoreUint32(&buf[0], bad)
			atomic.StoreUint32(&buf[0], good)
		}
		close(done)
	}()
	counts := map[string]int{}
	for range 3000 {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			counts["socket "+unix.ErrnoName(err.(unix.Errno))]++
			continue
		}
		_, _, e := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), 16)
		if e == 0 {
			counts["OK"]++
		} else {
			counts[unix.ErrnoName(e)]++
		}
		unix.Close(fd)
	}
	stop.Store(true)
	<-done
	runtime.KeepAlive(buf)
	return fmt.Sprint(counts)
}
