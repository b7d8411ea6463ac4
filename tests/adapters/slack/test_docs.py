"""The adapters' docstring examples run as tests (they are documentation that must not rot)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "adapters.slack.context",
    "adapters.slack.markdown",
    "adapters.slack.charts",
    "adapters.slack.limits",
    "adapters.slack.elements",
    "adapters.slack.tables",
    "adapters.slack.render",
    "adapters.slack.controls",
    "adapters.slack.identity",
    "adapters.slack.answer",
    "adapters.slack.status",
    "adapters.slack.stream",
    "adapters.slack.private",
    "adapters.slack.history",
    "adapters.slack.threads",
    "adapters.slack.installations",
    "adapters.slack.oauth_state",
    "bots.slack.settings",
    "bots.slack.metrics",
    "bots.slack.bot",
    "bots.slack.clients",
    "bots.slack.turns",
    "bots.slack.queued",
    "bots.slack.interactions",
    "bots.slack.app",
    "tests.fakes.slack_api",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
