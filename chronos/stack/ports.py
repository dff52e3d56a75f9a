"""Free loopback ports, chosen when the stack starts so that two stacks (or a test and a user's
stack) never collide."""

from __future__ import annotations

import contextlib
import socket

LOOPBACK = "127.0.0.1"


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
        return False


def _bindable_everywhere(port: int) -> bool:
    """The Prometheus reporter binds all interfaces, so its ports must be free on 0.0.0.0 too."""
    return not port_in_use(port, LOOPBACK) and not port_in_use(port, "0.0.0.0")


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free right now (all sockets are held until every port is picked)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((LOOPBACK, 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def free_port_block(size: int, avoid: frozenset[int] = frozenset(), attempts: int = 200) -> int:
    """First port of `size` consecutive ports free on every interface (for a port-range option)."""
    for _ in range(attempts):
        base = free_ports(1)[0]
        block = range(base, base + size)
        if base + size < 65535 and not avoid.intersection(block) and all(
            _bindable_everywhere(p) for p in block
        ):
            return base
    raise OSError(f"no block of {size} free consecutive ports found")
