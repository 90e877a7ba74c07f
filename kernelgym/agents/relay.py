"""``python -I -S relay.py [--listen HOST:PORT=SOCKET ...] -- CMD...``: the network of an agent CLI's sandbox.

An agent CLI runs in a network namespace of its own (bwrap ``--unshare-net``, `kernelgym.agents.confine`): it holds
only a loopback device, and nothing of the host is reachable from it. This script runs first in that namespace: for
each ``--listen`` it listens on HOST:PORT (a loopback address of the namespace) and relays every connection made
there, byte for byte, to the unix socket SOCKET, which kernelgym binds into the sandbox from outside (the MCP server,
the model endpoint, the proxy to the model API). Then it starts CMD (the CLI), with its own stdin, stdout and stderr,
waits for it, and exits with its status (128 + N for a CMD killed by signal N). No other port of the namespace has a
listener, and the namespace has no route out: a connection to any other address or port fails.

Standard library only, and no kernelgym import: it runs with ``python -I -S`` from its path inside the sandbox, where
kernelgym's sources are not mounted. `pipe` is shared with the host side (`kernelgym.agents.confine`).
"""
from __future__ import annotations

import socket
import subprocess
import sys
import threading

#: Bytes read at a time from one side of a relayed connection.
CHUNK = 65536


def _copy(src: socket.socket, dst: socket.socket) -> None:
    """Copy `src` to `dst` until `src` ends (then half-close `dst`) or either side fails (then close both)."""
    try:
        while True:
            data = src.recv(CHUNK)
            if not data:
                break
            dst.sendall(data)
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    except OSError:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def pipe(a: socket.socket, b: socket.socket, first: bytes = b"") -> None:
    """Relay `a` <-> `b` in two daemon threads (`first`: bytes already read from `a`, sent to `b` first); both
    sockets are closed once both directions are done."""
    if first:
        try:
            b.sendall(first)
        except OSError:
            a.close()
            b.close()
            return
    done = threading.Barrier(2, action=lambda: (a.close(), b.close()))

    def run(src, dst):
        try:
            _copy(src, dst)
        finally:
            try:
                done.wait()
            except threading.BrokenBarrierError:
                pass

    for src, dst in ((a, b), (b, a)):
        threading.Thread(target=run, args=(src, dst), daemon=True).start()


def serve(listener: socket.socket, connect) -> None:
    """Accept on `listener` for ever (daemon thread); relay each connection to the socket `connect()` returns (a
    connection `connect` cannot make is closed at once)."""
    def loop():
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = connect()
            except OSError:
                client.close()
                continue
            pipe(client, upstream)
    threading.Thread(target=loop, daemon=True).start()


def listen_tcp(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port); an IPv6 address may be given in brackets."""
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    return sock


def unix_connector(path: str):
    def connect() -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
        except OSError:
            s.close()
            raise
        return s
    return connect


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: relay.py [--listen HOST:PORT=SOCKET ...] -- CMD...", file=sys.stderr)
        return 2
    split = argv.index("--")
    options, cmd = argv[:split], argv[split + 1:]
    pairs = []
    while options:
        if options[0] != "--listen" or len(options) < 2:
            print(f"relay.py: unknown argument {options[0]!r}", file=sys.stderr)
            return 2
        address, path = options[1].split("=", 1)
        host, port = address.rsplit(":", 1)
        pairs.append((host, int(port), path))
        options = options[2:]
    try:
        for host, port, path in pairs:  # every listener is up before the CLI starts
            serve(listen_tcp(host, port), unix_connector(path))
    except OSError as e:
        print(f"kernelgym relay: cannot listen: {e}", file=sys.stderr, flush=True)
        return 126
    try:
        child = subprocess.Popen(cmd)
    except OSError as e:
        print(f"kernelgym relay: cannot start {cmd[0]!r}: {e}", file=sys.stderr, flush=True)
        return 127
    rc = child.wait()
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
