"""`threadline dev` as a command: --open hands the page's address to the browser."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bots.dev.server import IN_CONTAINER, may_listen_on

ROOT = Path(__file__).resolve().parents[2]


def test_open_gives_the_browser_the_consoles_address(tmp_path: Path) -> None:
    opened = tmp_path / "opened"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" > {opened}\n')
    browser.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bots.cli",
            "dev",
            "--port",
            "0",
            "--open",
            "--scripted",
            "--data-dir",
            str(tmp_path / "data"),
        ],
        cwd=ROOT,
        env={**env, "BROWSER": f"{browser} %s", "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    try:
        found = re.search(r"(http://\S+)", process.stdout.readline())
        assert found
        deadline = time.monotonic() + 20  # a bounded poll of the browser process
        while not (opened.exists() and opened.read_text().strip()):
            assert time.monotonic() < deadline, "the browser was never opened"
            time.sleep(0.05)
        assert opened.read_text().strip() == found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()


def test_every_interface_is_refused_outside_the_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console has no login: only the Threadline image (``THREADLINE_CONTAINER=1``, whose
    interfaces are the container's own) may listen beyond loopback; elsewhere 0.0.0.0 is
    refused before anything starts. Its Host and Origin checks are tested in the image
    (tests/deploy/test_image.py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", IN_CONTAINER)}
    argv = [sys.executable, "-m", "bots.cli", "dev", "--host", "0.0.0.0", "--port", "0"]
    done = subprocess.run(
        [*argv, "--data-dir", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "only listens on loopback" in done.stderr and "127.0.0.1:8765:8765" in done.stderr
    for value in ("0", "true", ""):
        monkeypatch.setenv(IN_CONTAINER, value)
        assert not may_listen_on("0.0.0.0")
        assert not may_listen_on("10.0.0.5")  # never a chosen address, only all of them
    monkeypatch.setenv(IN_CONTAINER, "1")
    assert may_listen_on("0.0.0.0") and not may_listen_on("10.0.0.5")
