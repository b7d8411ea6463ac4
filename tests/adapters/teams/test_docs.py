"""Every docstring example in the Teams wing (``adapters.teams``, ``bots.teams``) runs: every
module of both packages is collected, so a new module needs no list to be kept."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import adapters.teams
import bots.teams

MODULES = sorted(
    [m.name for m in pkgutil.walk_packages(adapters.teams.__path__, "adapters.teams.")]
    + [m.name for m in pkgutil.walk_packages(bots.teams.__path__, "bots.teams.")]
    # bots.processes (shared by both bots) was on this list before the wings; it stays
    # covered here until one doctest runner collects the whole package.
    + ["bots.processes"]
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    failures, _ = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert failures == 0
