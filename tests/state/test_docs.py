"""Every docstring example in agent_core.state runs (no server needed: the Redis examples
only build clients, which connect lazily)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import agent_core.state

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(agent_core.state.__path__, "agent_core.state.")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
