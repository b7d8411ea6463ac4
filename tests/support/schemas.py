"""Where the official schemas live: ``shared/schemas`` beside the repository (as CI lays it
out), else the workplace's copy. Missing schemas fail the tests that need them - validation
is a requirement, never skipped."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_CANDIDATES = (ROOT.parent / "shared" / "schemas", Path("/work/shared/schemas"))


def schemas_dir() -> Path:
    for candidate in _CANDIDATES:
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        "the official schemas were not found: put shared/ beside the repository "
        f"(looked in {', '.join(str(c) for c in _CANDIDATES)})"
    )
