"""Every docstring example in the packages runs: one runner over every module of
``agent_core``, ``adapters`` and ``bots`` (a new module needs no list to be kept)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import adapters
import agent_core
import bots

MODULES = sorted(
    module.name
    for package in (agent_core, adapters, bots)
    for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
