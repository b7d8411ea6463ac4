"""``GraphAgent``: the same agent, its turn run as a LangGraph ``StateGraph``.

``agent`` (GraphAgent), ``turn`` (the graph, the only module that imports LangGraph),
``approval`` (pausing for the asker's decision), ``state`` (what a checkpoint holds) and
``handoff`` (components from the graph task to the reader). Importing this package does not
import LangGraph; building a ``GraphAgent`` does.
"""

from agent_core.graph.agent import GraphAgent, PendingApproval, TurnCheckpoint

__all__ = ["GraphAgent", "PendingApproval", "TurnCheckpoint"]
