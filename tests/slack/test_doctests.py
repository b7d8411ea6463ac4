"""The adapters' docstring examples run as tests (they are documentation that must not rot)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "adapters.slack.context",
    "adapters.slack.markdown",
    "adapters.slack.dataviz",
    "adapters.slack.limits",
    "adapters.slack.elements",
    "adapters.slack.tables",
    "adapters.slack.blocks",
    "adapters.slack.controls",
    "adapters.slack.cache",
    "adapters.slack.identity",
    "adapters.slack.answer",
    "adapters.slack.status",
    "adapters.slack.reply",
    "adapters.slack.private",
    "adapters.slack.history",
    "adapters.slack.threads",
    "adapters.slack.installations",
    "adapters.slack.oauth_state",
    "bots.slack_settings",
    "bots.slack_metrics",
    "bots.slack_bot",
    "bots.slack_wiring",
    "bots.slack_turns",
    "bots.slack_queued",
    "bots.slack_interactions",
    "bots.slack_app",
    "adapters.slack.testing",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
