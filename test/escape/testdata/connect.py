# Tries to connect to each target and prints "target RESULT": OK or the errno name.
# Targets: unix:/path, abstract:name, tcp:HOST:PORT, tcp6:HOST:PORT.
import errno
import socket
import sys


def attempt(target):
    kind, _, rest = target.partition(":")
    if kind in ("unix", "abstract"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        addr = rest if kind == "unix" else "\0" + rest
    else:
        host, _, port = rest.rpartition(":")
        s = socket.socket(socket.AF_INET6 if kind == "tcp6" else socket.AF_INET, socket.SOCK_STREAM)
        addr = (host, int(port))
    s.settimeout(2)
    try:
        s.connect(addr)
    except socket.timeout:
        s.close()
        return "TIMEOUT"
    except OSError as e:
        s.close()
        return errno.errorcode.get(e.errno, str(e.errno))
    try:
        s.sendall(b"hello from connect.py\n")
    except OSError:
        pass  # the peer may have closed already: connected all the same
    s.close()
    return "OK"


for t in sys.argv[1:]:
    print(t, attempt(t), flush=True)
