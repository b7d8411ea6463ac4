"""Loopback ports for test servers (tests bind to 127.0.0.1 only)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
