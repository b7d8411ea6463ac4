"""``GraphAgent``: the same agent, its turn run as a LangGraph ``StateGraph``.

``agent`` (GraphAgent), ``turn`` (the graph, the only module that imports LangGraph),
``state`` (what a checkpoint holds) and ``handoff`` (components from the graph task to the
reader). Tool approval is the one mechanism both agents share (``agent_core.approvals``).
Importing this package does not import LangGraph; building a ``GraphAgent`` does.
"""

from agent_core.graph.agent import GraphAgent, TurnCheckpoint

__all__ = ["GraphAgent", "TurnCheckpoint"]
