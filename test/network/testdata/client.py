# The network tests' client. Each command makes connections of one kind and prints
# what happened, for the test's log; the verdict is the servers' logs, never this.
#
#   probe TARGET...            direct sockets, no proxy; prints "TARGET RESULT" each
#       tcp:HOST:PORT  tcp6:HOST:PORT  mptcp:HOST:PORT  udp:HOST:PORT
#       icmp:HOST  packet:IFNAME  dns:SERVER:NAME  unix:PATH  abstract:NAME
#   http PROXY TARGET HOST PATH         a raw forward-proxy GET http://TARGET/PATH
#                                       with "Host: HOST" ("-": none)
#   connect PROXY TARGET raw LINE       CONNECT TARGET, then send LINE
#   connect PROXY TARGET tls SNI PATH   CONNECT TARGET, then TLS with server_name
#                                       SNI ("-": none), then GET PATH; alerttls
#                                       (alerttls0) sends a TLS alert record
#                                       of version 3.3 (0.0) first
#   socks PROXY ATYP ADDR PORT raw LINE | tls SNI PATH
#                                       the same through SOCKS5; ATYP is domain,
#                                       ipv4 or ipv6
#   send PROXY BYTES                    send BYTES to the proxy; print the status
#                                       lines of what comes back
#   urllib URL CAFILE                   urllib.request with the proxy variables
#   resolve NAME                        getaddrinfo
#
# Arguments take Python escapes (\x00, \t) so that a test can pass any byte.
# Every payload the probe sends says "moat-nettest TARGET $PROBE_TOKEN".
import codecs
import errno
import os
import socket
import ssl
import struct
import sys
import urllib.request

TOKEN = os.environ.get("PROBE_TOKEN", "none")
TIMEOUT = 5


def raw(s):
    return codecs.decode(s, "unicode_escape").encode("latin-1")


def why(e):
    if isinstance(e, socket.timeout):
        return "TIMEOUT"
    if isinstance(e, socket.gaierror):
        return "EAI:" + str(e.errno)
    if isinstance(e, OSError) and e.errno:
        return errno.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__ + ":" + str(e).replace(" ", "_")[:80]


def split_hostport(rest):
    host, _, port = rest.rpartition(":")
    return host, int(port)


def icmp_echo(target):
    payload = ("moat-nettest " + target + " " + TOKEN).encode()
    hdr = struct.pack("!BBHHH", 8, 0, 0, 0x4d54, 1)
    data = hdr + payload
    s = 0
    for i in range(0, len(data), 2):
        w = data[i] << 8 | (data[i + 1] if i + 1 < len(data) else 0)
        s += w
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return struct.pack("!BBHHH", 8, 0, ~s & 0xFFFF, 0x4d54, 1) + payload


def dns_query(name):
    q = struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\0" + struct.pack("!HH", 1, 1)


def probe(target):
    kind, _, rest = target.partition(":")
    payload = ("moat-nettest " + target + " " + TOKEN + "\n").encode()
    if kind in ("unix", "abstract"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(TIMEOUT)
        s.connect(rest if kind == "unix" else "\0" + rest)
        s.sendall(payload)
        return "OK"
    if kind in ("tcp", "mptcp"):
        host, port = split_hostport(rest)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262 if kind == "mptcp" else 0)
        s.settimeout(TIMEOUT)
        s.connect((host, port))
        s.sendall(payload)
        s.recv(100)
        return "OK"
    if kind == "tcp6":
        host, port = split_hostport(rest)
        ai = socket.getaddrinfo(host, port, socket.AF_INET6, socket.SOCK_STREAM)[0]
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.settimeout(TIMEOUT)
        s.connect(ai[4])
        s.sendall(payload)
        s.recv(100)
        return "OK"
    if kind == "udp":
        host, port = split_hostport(rest)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(payload, (host, port))
        return "SENT"
    if kind == "dns":
        server, _, name = rest.partition(":")
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(TIMEOUT)
        s.sendto(dns_query(name), (server, 53))
        s.recv(512)
        return "ANSWERED"
    if kind == "icmp":
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        except OSError:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
        s.sendto(icmp_echo(target), (rest, 0))
        return "SENT"
    if kind == "packet":
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
        s.bind((rest, 0))
        frame = b"\xff" * 6 + b"\0" * 6 + struct.pack("!H", 0x88B5) + payload
        s.send(frame)
        return "SENT"
    return "BAD-TARGET"


def proxy_conn(proxy):
    host, port = split_hostport(proxy)
    s = socket.create_connection((host, port), timeout=TIMEOUT)
    s.settimeout(TIMEOUT)
    return s


def read_head(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data.split(b"\r\n", 1)[0].decode("latin-1")


def tunnel(s, mode, args):
    """After a tunnel opened: send a line, or TLS then a GET."""
    if mode == "raw":
        s.sendall(raw(args[0]) + b"\n")
        return s.recv(200).decode("latin-1").strip()
    sni, path = args[0], args[1]
    if mode in ("alerttls", "alerttls0"):
        # A TLS warning alert (user_canceled) before the ClientHello: Go's TLS
        # servers skip it and read the ClientHello that follows; they take a
        # first record of any version below 0x1000 (alerttls0: version 0.0).
        s.sendall(b"\x15" + (b"\x00\x00" if mode == "alerttls0" else b"\x03\x03") + b"\x00\x02\x01\x5a")
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    t = ctx.wrap_socket(s, server_hostname=None if sni == "-" else sni)
    t.sendall(("GET " + path + " HTTP/1.1\r\nHost: " + (sni if sni != "-" else "none") + "\r\nConnection: close\r\n\r\n").encode())
    return read_head(t)


def cmd_http(proxy, target, host, path):
    s = proxy_conn(proxy)
    req = b"GET http://" + raw(target) + b"/" + raw(path) + b" HTTP/1.1\r\n"
    if host != "-":
        req += b"Host: " + raw(host) + b"\r\n"
    s.sendall(req + b"Connection: close\r\n\r\n")
    return read_head(s)


def cmd_connect(proxy, target, mode, *args):
    s = proxy_conn(proxy)
    t = raw(target)
    s.sendall(b"CONNECT " + t + b" HTTP/1.1\r\nHost: " + t + b"\r\n\r\n")
    status = read_head(s)
    if " 200" not in status:
        return "REFUSED " + status
    return "OPEN " + tunnel(s, mode, args)


def cmd_socks(proxy, atyp, addr, port, mode, *args):
    s = proxy_conn(proxy)
    s.sendall(b"\x05\x01\x00")
    if s.recv(2) != b"\x05\x00":
        return "NO-METHOD"
    if atyp == "domain":
        a = raw(addr)
        dst = b"\x03" + bytes([len(a)]) + a
    elif atyp == "ipv4":
        dst = b"\x01" + socket.inet_pton(socket.AF_INET, addr)
    else:
        dst = b"\x04" + socket.inet_pton(socket.AF_INET6, addr)
    s.sendall(b"\x05\x01\x00" + dst + struct.pack("!H", int(port)))
    reply = s.recv(262)
    if len(reply) < 2 or reply[1] != 0:
        return "REFUSED socks-reply-%d" % (reply[1] if len(reply) > 1 else -1)
    return "OPEN " + tunnel(s, mode, args)


def cmd_send(proxy, data):
    s = proxy_conn(proxy)
    s.sendall(raw(data))
    got = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except socket.timeout:
        pass
    return " | ".join(l.decode("latin-1") for l in got.split(b"\r\n") if l.startswith(b"HTTP/"))


def cmd_urllib(url, cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    with urllib.request.urlopen(url, context=ctx, timeout=TIMEOUT) as r:
        return "%d %s" % (r.status, r.read(100).decode().strip())


def main(argv):
    cmd, args = argv[0], argv[1:]
    if cmd == "probe":
        for t in args:
            try:
                r = probe(t)
            except Exception as e:
                r = why(e)
            print(t, r, flush=True)
        return
    try:
        if cmd == "http":
            r = cmd_http(*args)
        elif cmd == "connect":
            r = cmd_connect(*args)
        elif cmd == "socks":
            r = cmd_socks(*args)
        elif cmd == "send":
            r = cmd_send(*args)
        elif cmd == "urllib":
            r = cmd_urllib(*args)
        elif cmd == "resolve":
            r = " ".join(sorted({a[4][0] for a in socket.getaddrinfo(args[0], 80)}))
        else:
            r = "BAD-COMMAND"
    except Exception as e:
        r = "ERROR " + why(e)
    print(cmd, r, flush=True)


main(sys.argv[1:])
