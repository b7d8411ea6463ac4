"""The reference implementation's Python: vanna 2.0.2 in its own virtualenv, created on first
use under ~/.cache/threadline-bench (the benchmarks compare against it in the same run)."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

REFERENCE = "vanna==2.0.2"
REFERENCE_VENV = Path.home() / ".cache" / "threadline-bench" / "vanna-2.0.2"


def reference_python(install: bool) -> Path | None:
    """The virtualenv's Python; ``None`` (the reason printed) without one and ``install``
    off, or when installing failed."""
    python = REFERENCE_VENV / "bin" / "python"
    if not python.exists() and not install:
        print(
            f"reference skipped: no {REFERENCE} virtualenv at {REFERENCE_VENV} "
            "(run without --no-install to create it)",
            file=sys.stderr,
        )
        return None
    if not python.exists():
        print(f"creating {REFERENCE_VENV} with {REFERENCE} (first run only)...", file=sys.stderr)
        venv.create(REFERENCE_VENV, with_pip=True)
        installed = subprocess.run(
            [str(python), "-m", "pip", "install", "-q", REFERENCE], check=False
        )
        if installed.returncode != 0:
            return None
    return python
