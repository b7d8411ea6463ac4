"""Every docstring example in agent_core actually runs."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import agent_core

OPTIONAL = {
    "agent_core.llm.anthropic", "agent_core.graph.agent", "agent_core.graph.turn",
    "agent_core.extensions.otel",
}
MODULES = sorted(
    m.name for m in pkgutil.walk_packages(agent_core.__path__, "agent_core.")
    if not any(m.name.startswith(o) for o in OPTIONAL)
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
