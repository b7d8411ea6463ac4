"""`threadline dev` as a command: --open hands the page's address to the browser."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

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
