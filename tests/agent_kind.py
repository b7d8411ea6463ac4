"""Which agent implementation the channel end-to-end suites drive.

``THREADLINE_TEST_AGENT=graph`` runs the Slack and Teams suites against ``GraphAgent``
(``scripts/test`` does both), proving the two agents interchangeable behind a channel.
"""

from __future__ import annotations

import os

from agent_core import Agent


def agent_class() -> type[Agent]:
    kind = os.environ.get("THREADLINE_TEST_AGENT", "agent")
    if kind == "graph":
        from agent_core.graph import GraphAgent

        return GraphAgent
    if kind != "agent":
        raise ValueError(f"THREADLINE_TEST_AGENT must be 'agent' or 'graph', not {kind!r}")
    return Agent
