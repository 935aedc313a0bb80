#!/usr/bin/env python3
"""Forward TCP ports from a network namespace's loopback to the host's loopback.

Usage: netns-forward.py NETNS_PATH [LISTEN_ADDR:]LISTEN_PORT=HOST_PORT [...]

Listens on LISTEN_ADDR:LISTEN_PORT (default 127.0.0.1; any 127.x.y.z) *inside* the namespace
(e.g. /run/netns/NAME)
and connects each accepted connection to 127.0.0.1:HOST_PORT in the namespace
this process started in. A socket stays in the namespace it was created in,
so the process enters the target namespace only to create the listeners and
returns before it connects anywhere. Used by tools/argocd.sh: Argo CD's
application controller binds its metrics port on 0.0.0.0, so it runs in a
namespace that has only ``lo``, and reaches the test kube-apiservers (and the
test Helm repository) through this forwarder. Prints "ready" once listening.
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys
import threading

CLONE_NEWNET = 0x40000000


def _setns(fd: int) -> None:
    if hasattr(os, "setns"):
        os.setns(fd, CLONE_NEWNET)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (dst, src):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _serve(listener: socket.socket, host_port: int) -> None:
    while True:
        conn, _ = listener.accept()
        try:
            up = socket.create_connection(("127.0.0.1", host_port), timeout=10)
            up.settimeout(None)
        except OSError:
            conn.close()
            continue
        threading.Thread(target=_pipe, args=(conn, up), daemon=True).start()
        threading.Thread(target=_pipe, args=(up, conn), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    pairs = []
    for arg in argv[2:]:
        left, _, right = arg.partition("=")
        addr, _, port = left.rpartition(":")
        addr = addr or "127.0.0.1"
        if not (port.isdigit() and right.isdigit() and addr.startswith("127.")):
            print(f"netns-forward: bad mapping {arg!r} (want [127.x.y.z:]LISTEN_PORT=HOST_PORT)", file=sys.stderr)
            return 2
        pairs.append((addr, int(port), int(right)))
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(argv[1], os.O_RDONLY)
    listeners = []
    _setns(target)
    try:
        for listen_addr, listen_port, host_port in pairs:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((listen_addr, listen_port))
            s.listen(64)
            listeners.append((s, host_port))
    finally:
        _setns(home)
    threads = [threading.Thread(target=_serve, args=lp, daemon=True) for lp in listeners]
    for t in threads:
        t.start()
    print("ready", flush=True)
    for t in threads:
        t.join()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
