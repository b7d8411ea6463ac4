"""The GraphAgent modules' docstring examples run (tests/core skips optional modules)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["agent_core.graph.agent", "agent_core.graph.approval", "agent_core.graph.handoff",
           "agent_core.graph.state", "agent_core.graph.turn"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    failures, _ = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert failures == 0
