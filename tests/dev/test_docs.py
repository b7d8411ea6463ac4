"""Every docstring example in the console (``bots.dev``) actually runs."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import bots.dev

MODULES = sorted(m.name for m in pkgutil.walk_packages(bots.dev.__path__, "bots.dev."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    failures, _ = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert failures == 0
