# Pushes argv[1] into the terminal on stdin with TIOCSTI, one byte at a time, then tries
# TIOCLINUX's paste; writes "TIOCSTI RESULT" and "TIOCLINUX RESULT" to argv[2] and a
# marker line (argv[3]) to stdout, the terminal.
import errno
import fcntl
import sys
import termios

TIOCLINUX = 0x541C
TIOCL_PASTESEL = 3


def attempt(fn):
    try:
        fn()
        return "OK"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def sti():
    for b in sys.argv[1].encode():
        fcntl.ioctl(0, termios.TIOCSTI, bytes([b]))


res = ["TIOCSTI " + attempt(sti), "TIOCLINUX " + attempt(lambda: fcntl.ioctl(0, TIOCLINUX, bytes([TIOCL_PASTESEL])))]
if len(sys.argv) > 3:
    print(sys.argv[3], flush=True)
if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(res) + "\n")
