"""agent_core's folders stand in layers: no loop between them, and no import from a lower
layer up to a higher one (STYLE.md: "Layers hold at every scale").

A unit is one direct subfolder of ``agent_core`` (``state``) or one top-level module
(``config.py``). Only imports that run when a module is imported count: module level,
including inside ``if``/``try``, but not under ``if TYPE_CHECKING:`` nor inside functions.
``test_architecture.py`` holds the finer rule (no loop between single modules, every import
counted); this one holds the shape a reader sees, from the contracts at the bottom to the
composition root on top. When a lower layer needs something from a higher one, pass it in.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path

AGENT_CORE = Path(__file__).resolve().parents[2] / "agent_core"

Edges = dict[tuple[str, str], set[str]]
"""(importing unit, imported unit) -> the files of the importing unit that make the edge."""

LAYERS: list[tuple[str, set[str]]] = [
    (
        "foundation: errors, the clock, people, settings, components, observability",
        {
            "errors.py",
            "clock.py",
            "users.py",
            "channel.py",
            "masking.py",
            "settings.py",
            "components",
            "observability.py",
            "feedback.py",
            "audit.py",
            "audit_chain.py",
        },
    ),
    (
        "contracts: memory, the tool contract and its context, conversations, extension hooks",
        {"memory", "context.py", "tool_contract.py", "conversations.py", "extensions"},
    ),
    (
        "services: LLMs, state, tools, approval records, the agent's config",
        {"llm", "state", "tools", "database", "approvals", "config.py", "prompts.py"},
    ),
    (
        "features: the turn, commands, usage, schedules, MCP, the audit trail",
        {"turn", "workflow.py", "usage", "schedules", "mcp", "audit_trail.py", "audit_settings.py"},
    ),
    (
        "composition root: the agent, its graph, the runtime, the state factory, sweeps",
        {
            "__init__.py",
            "agent.py",
            "graph",
            "runtime.py",
            "state_factory.py",
            "forget.py",
            "retention.py",
        },
    ),
]


def unit_of(module: str, package: Path) -> str:
    """``agent_core.state.turns`` -> ``state``; ``agent_core.config`` -> ``config.py``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    return parts[1] if (package / parts[1]).is_dir() else f"{parts[1]}.py"


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def module_level_imports(body: Sequence[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports that run on import: not in functions, not under ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _type_checking(node.test):
                yield from module_level_imports(node.body)
            yield from module_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from module_level_imports(block)
            for handler in node.handlers:
                yield from module_level_imports(handler.body)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from module_level_imports(node.body)


def imported_modules(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The dotted modules ``node`` names, relative imports resolved against ``module``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = package[: len(package) - node.level + 1]
        base = ".".join([*anchor, base] if base else anchor)
    if "." not in base:  # ``from agent_core import config``: the unit is the name imported
        return [f"{base}.{alias.name}" for alias in node.names]
    return [base]


def unit_edges(package: Path) -> Edges:
    edges: Edges = defaultdict(set)
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        source = unit_of(module, package)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in module_level_imports(tree.body):
            for target in imported_modules(node, module, is_package):
                if target.split(".")[0] != package.name:
                    continue
                imported = unit_of(target, package)
                if imported != source:
                    edges[source, imported].add(str(path.relative_to(package.parent)))
    return edges


def loops(edges: Edges) -> list[list[str]]:
    """The strongly connected components of more than one unit, each sorted."""
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target in edges:
        graph[source].add(target)
    return cycles(graph)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components (Tarjan) of more than one node, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def describe_loop(component: list[str], edges: Edges) -> str:
    inside = [
        f"  {source} -> {target}: {', '.join(sorted(files))}"
        for (source, target), files in sorted(edges.items())
        if source in component and target in component
    ]
    return "\n".join([f"loop {component}:", *inside])


def layer_problems(package: Path, edges: Edges, layers: list[tuple[str, set[str]]]) -> list[str]:
    """Imports up to a higher layer, units in no layer, and layers naming no unit."""
    layer_of = {unit: number for number, (_, units) in enumerate(layers) for unit in units}
    units = {unit_of(f"{package.name}.{child.stem}", package) for child in _children(package)}
    problems = [f"{unit} is in no layer" for unit in sorted(units - set(layer_of))]
    problems += [
        f"the layers name {unit}, which is not a unit" for unit in sorted(set(layer_of) - units)
    ]
    for (source, target), files in sorted(edges.items()):
        if source in layer_of and target in layer_of and layer_of[target] > layer_of[source]:
            problems.append(
                f"{source} (layer {layers[layer_of[source]][0]!r}) imports {target}"
                f" (layer {layers[layer_of[target]][0]!r}): {', '.join(sorted(files))}"
            )
    return problems


def _children(package: Path) -> Iterator[Path]:
    for child in sorted(package.iterdir()):
        if child.suffix == ".py" or (child.is_dir() and (child / "__init__.py").exists()):
            yield child


def check(package: Path, layers: list[tuple[str, set[str]]]) -> list[str]:
    edges = unit_edges(package)
    return [describe_loop(component, edges) for component in loops(edges)] + layer_problems(
        package, edges, layers
    )


def test_agent_cores_folders_stand_in_layers_without_loops() -> None:
    problems = check(AGENT_CORE, LAYERS)
    assert not problems, "\n".join(problems)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_a_loop_between_units_is_named_with_the_files_that_make_it(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {
            "__init__.py": "",
            "low/__init__.py": "",
            "low/store.py": "from pkg.high import use\n",
            "high.py": "from .low.store import thing\n",
            "typed.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.high\n"
            ),
            "late.py": "def f():\n    import pkg.high\n",
        },
    )
    layers = [("bottom", {"__init__.py", "low", "typed.py", "late.py"}), ("top", {"high.py"})]

    problems = check(package, layers)

    assert problems == [
        "loop ['high.py', 'low']:\n"
        "  high.py -> low: pkg/high.py\n"
        "  low -> high.py: pkg/low/store.py",
        "low (layer 'bottom') imports high.py (layer 'top'): pkg/low/store.py",
    ]


def test_a_unit_in_no_layer_and_a_stale_name_are_named(tmp_path: Path) -> None:
    package = _write(tmp_path, {"__init__.py": "", "new.py": "import pkg.old\n", "old.py": ""})

    problems = check(package, [("only", {"__init__.py", "old.py", "gone.py"})])

    assert problems == ["new.py is in no layer", "the layers name gone.py, which is not a unit"]
