# Makes real system calls and prints "name RESULT" per line: OK, or the errno name.
# Used by the escape tests inside the sandbox and, as a control, outside it.
import ctypes
import errno
import os
import platform
import socket
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

# Syscall numbers that differ between architectures (io_uring and the mount API are shared).
NR = {
    "x86_64": {"bpf": 321, "userfaultfd": 323, "keyctl": 250, "perf_event_open": 298,
               "personality": 135, "unshare": 272, "setns": 308, "ptrace": 101,
               "open_by_handle_at": 304},
    "aarch64": {"bpf": 280, "userfaultfd": 282, "keyctl": 219, "perf_event_open": 241,
                "personality": 92, "unshare": 97, "setns": 268, "ptrace": 117,
                "open_by_handle_at": 265},
}[platform.machine()]
NR.update({"io_uring_setup": 425, "open_tree": 428, "fsopen": 430, "clone3": 435})


def name(e):
    return errno.errorcode.get(e, str(e))


def sc(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return "OK" if r >= 0 else name(ctypes.get_errno())


def sock(family, typ, proto=0):
    try:
        socket.socket(family, typ, proto).close()
        return "OK"
    except OSError as e:
        return name(e.errno)


CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x00020000, 0x40000000
AT_FDCWD = -100
probes = [
    ("unshare_user", lambda: sc(NR["unshare"], CLONE_NEWUSER)),
    ("unshare_mount", lambda: sc(NR["unshare"], CLONE_NEWNS)),
    ("unshare_net", lambda: sc(NR["unshare"], CLONE_NEWNET)),
    ("mount_tmpfs", lambda: "OK" if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0 else name(ctypes.get_errno())),
    ("io_uring_setup", lambda: sc(NR["io_uring_setup"], 1, 0)),
    ("clone3", lambda: sc(NR["clone3"], 0, 0)),
    ("bpf", lambda: sc(NR["bpf"], 5, 0, 0)),
    ("userfaultfd", lambda: sc(NR["userfaultfd"], 0)),
    ("keyctl", lambda: sc(NR["keyctl"], 0, -3, 0)),
    ("perf_event_open", lambda: sc(NR["perf_event_open"], 0, 0, -1, -1, 0)),
    ("personality_no_aslr", lambda: sc(NR["personality"], 0x0040000)),
    ("open_tree", lambda: sc(NR["open_tree"], AT_FDCWD, ctypes.cast(ctypes.c_char_p(b"/"), ctypes.c_void_p).value, 1)),
    ("fsopen", lambda: sc(NR["fsopen"], ctypes.cast(ctypes.c_char_p(b"tmpfs"), ctypes.c_void_p).value, 0)),
    ("open_by_handle_at", lambda: sc(NR["open_by_handle_at"], AT_FDCWD, 0, 0)),
    ("socket_af_packet", lambda: sock(17, socket.SOCK_RAW)),
    ("socket_af_vsock", lambda: sock(40, socket.SOCK_STREAM)),
    ("socket_mptcp", lambda: sock(socket.AF_INET, socket.SOCK_STREAM, 262)),
    ("socket_mptcp_cloexec", lambda: sock(socket.AF_INET, socket.SOCK_STREAM | socket.SOCK_CLOEXEC, 262)),
    ("socket_mptcp6", lambda: sock(socket.AF_INET6, socket.SOCK_STREAM, 262)),
    ("socket_raw_icmp", lambda: sock(socket.AF_INET, socket.SOCK_RAW, 1)),
    ("socket_inet_packet", lambda: sock(socket.AF_INET, 10)),
]
probes.append(("ptrace_traceme", lambda: sc(NR["ptrace"], 0, 0, 0, 0)))
probes.append(("setns_net", lambda: sc(NR["setns"], os.open("/proc/self/ns/net", os.O_RDONLY), 0)))

# --control runs, outside the sandbox, only the probes that change nothing on the host:
# mount, personality, ptrace and unshare would act on the test's own host process.
SAFE = {"io_uring_setup", "clone3", "socket_mptcp", "socket_mptcp_cloexec", "socket_mptcp6", "socket_af_vsock"}
control = len(sys.argv) > 1 and sys.argv[1] == "--control"
for n, fn in probes:
    if control and n not in SAFE:
        continue
    print(n, fn(), flush=True)
