"""The docstring examples of every module of ``adapters.slack`` run as tests (they are
documentation that must not rot). New modules are picked up without a list to keep."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import adapters.slack

MODULES = [
    *sorted(m.name for m in pkgutil.iter_modules(adapters.slack.__path__, "adapters.slack.")),
    "tests.fakes.slack_api",  # the fake Slack Web API the tests drive
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
