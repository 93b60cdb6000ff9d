# Starts a unix socket server in the sandbox's /tmp and a TCP server on 127.0.0.1:PORT,
# connects to each and prints "unix OK" / "tcp OK" when a byte made the round trip.
import os
import socket
import sys
import tempfile
import threading


def serve(srv):
    c, _ = srv.accept()
    c.sendall(c.recv(16))
    c.close()


def roundtrip(family, addr, srv):
    threading.Thread(target=serve, args=(srv,), daemon=True).start()
    c = socket.socket(family, socket.SOCK_STREAM)
    c.settimeout(5)
    try:
        c.connect(addr)
        c.sendall(b"x")
        return "OK" if c.recv(16) == b"x" else "BAD"
    except OSError as e:
        return "ERR " + str(e)
    finally:
        c.close()


path = os.path.join(tempfile.mkdtemp(dir="/tmp"), "s.sock")
u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
u.bind(path)
u.listen(1)
print("unix", roundtrip(socket.AF_UNIX, path, u), flush=True)
if len(sys.argv) > 1:
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind(("127.0.0.1", int(sys.argv[1])))
    t.listen(1)
    print("tcp", roundtrip(socket.AF_INET, ("127.0.0.1", int(sys.argv[1])), t), flush=True)
