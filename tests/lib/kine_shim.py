"""Stand-in for kine (``/binaries/kine`` in the vcluster image; not built here): runs the bed's etcd
(``/binaries/etcd``) on loopback and serves it on the unix socket vCluster gives kine
(``--listen-address=unix://...``), byte for byte. Only storage differs: the virtual kube-apiserver
talks etcd's gRPC API either way. Other kine flags (``--endpoint`` SQLite, certificates, metrics)
are accepted and ignored.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

ETCD_PORT = 32379  # inside the vCluster's own network namespace


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _serve(conn: socket.socket) -> None:
    try:
        up = socket.create_connection(("127.0.0.1", ETCD_PORT))
    except OSError:
        conn.close()
        return
    threading.Thread(target=_pipe, args=(conn, up), daemon=True).start()
    _pipe(up, conn)


def main(argv: list[str]) -> int:
    listen = next((a.split("=", 1)[1] for a in argv if a.startswith("--listen-address=")), "")
    if not listen.startswith("unix://"):
        print(f"kine stand-in: unsupported --listen-address {listen!r}", file=sys.stderr)
        return 2
    path = listen[len("unix://") :]
    data = os.path.join(os.path.dirname(path), "etcd")
    url = f"http://127.0.0.1:{ETCD_PORT}"
    etcd = subprocess.Popen(
        [
            "/binaries/etcd",
            "--data-dir",
            data,
            "--listen-client-urls",
            url,
            "--advertise-client-urls",
            url,
            "--listen-peer-urls",
            "http://127.0.0.1:32380",
            "--initial-advertise-peer-urls",
            "http://127.0.0.1:32380",
            "--initial-cluster",
            "default=http://127.0.0.1:32380",
            "--log-level",
            "warn",
        ]
    )
    while True:
        try:
            socket.create_connection(("127.0.0.1", ETCD_PORT), timeout=1).close()
            break
        except OSError:
            if etcd.poll() is not None:
                return etcd.returncode or 1
            time.sleep(0.2)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.exists(path):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(64)
    threading.Thread(target=lambda: sys.exit(etcd.wait()), daemon=True).start()
    while etcd.poll() is None:
        conn, _peer = srv.accept()
        threading.Thread(target=_serve, args=(conn,), daemon=True).start()
    return etcd.returncode or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
