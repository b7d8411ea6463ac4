"""Fixtures shared by every test area."""

from __future__ import annotations

import socket

import pytest


def free_port() -> int:
    """A free TCP port on 127.0.0.1 (tests bind servers to loopback only)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def unused_port() -> int:
    return free_port()
