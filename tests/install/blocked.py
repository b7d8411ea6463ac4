"""Run a command as in a base install (``pip install threadline``, no extras): the extras'
modules cannot be imported. ``python -m tests.install.blocked MODULES -- ARGV...`` runs
``threadline ARGV`` with each top-level module of MODULES (comma-separated) unimportable."""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any


class Uninstalled(importlib.abc.MetaPathFinder):
    """A finder that says the blocked packages are not installed, as pip would have it."""

    def __init__(self, blocked: set[str]) -> None:
        self.blocked = blocked

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> Any:
        if name.partition(".")[0] in self.blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def main() -> int:
    modules, _, argv = " ".join(sys.argv[1:]).partition(" -- ")
    sys.meta_path.insert(0, Uninstalled(set(modules.split(","))))
    from bots.cli import main as threadline

    return threadline(argv.split())


if __name__ == "__main__":
    sys.exit(main())
