"""The turn: small stages over a ``TurnState``, each given the agent's frozen ``TurnDeps``.

    open_turn -> prepare -> (think -> act)* -> finish          (spec: Execution Order Summary)
                                              \\-> fail | settle_after_stop on error / Stop

Shared by ``Agent`` (a loop) and ``GraphAgent`` (a LangGraph graph). Stages that show
components as they happen are async generators (``open_turn``, ``think``, ``act``,
``fail``); the others are coroutines (``prepare``) or return their components at the end
(``finish``): every async generator costs the event loop a registration per turn.
"""

from agent_core.turn.acting import act, next_step
from agent_core.turn.deps import TurnDeps
from agent_core.turn.failing import fail
from agent_core.turn.finishing import finish
from agent_core.turn.opening import open_turn
from agent_core.turn.preparing import prepare
from agent_core.turn.state import TurnState
from agent_core.turn.stopping import settle_after_stop
from agent_core.turn.thinking import think

__all__ = [
    "TurnDeps",
    "TurnState",
    "act",
    "fail",
    "finish",
    "next_step",
    "open_turn",
    "prepare",
    "settle_after_stop",
    "think",
]
