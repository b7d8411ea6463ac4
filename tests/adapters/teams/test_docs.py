"""Every docstring example in adapters.teams and the Teams host modules actually runs."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import adapters.teams

MODULES = sorted(
    [m.name for m in pkgutil.walk_packages(adapters.teams.__path__, "adapters.teams.")]
    + ["bots.processes", "bots.teams.botbuilder", "bots.teams.connector", "bots.teams.bot",
       "bots.teams.metrics", "bots.teams.outbound", "bots.teams.settings", "bots.teams.turns"]
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
