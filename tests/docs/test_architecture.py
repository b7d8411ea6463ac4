"""The house rules of ARCHITECTURE.md, checked on the code's own imports: one direction
(``bots -> adapters -> agent_core``), no vendor SDK in ``agent_core``, and no import cycle
between modules (every import counts: module level, ``TYPE_CHECKING`` and inside functions).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.docs.test_layers import cycles

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("agent_core", "adapters", "bots")
FLOOR = {"agent_core": 1, "adapters": 2, "bots": 3}
NOT_IN_AGENT_CORE = ("slack_bolt", "slack_sdk", "botbuilder", "botframework", "aiohttp.web")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """What ``name`` imports; ``from package import module`` names the module itself."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            named = [module for module in submodules if module in modules]
            yield from named
            if len(named) < len(submodules):
                yield base


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: {target for target in _imports(name, path, modules) if target in modules} - {name}
        for name, path in modules.items()
    }


def test_imports_run_one_way_and_agent_core_stays_channel_free() -> None:
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        floor = FLOOR[name.split(".")[0]]
        for target in set(_imports(name, path, modules)):
            top = target.split(".")[0]
            if top in FLOOR and FLOOR[top] > floor:
                wrong.append(f"{name} imports {target} (a higher floor)")
            if floor == 1 and target.startswith(NOT_IN_AGENT_CORE):
                wrong.append(f"{name} imports {target} (a channel SDK in agent_core)")
    assert wrong == []


def test_no_import_cycle_between_modules() -> None:
    assert cycles(_graph()) == []
