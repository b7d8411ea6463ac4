"""What each answer costs, wired into every agent a command serves.

``attach_usage(served, state, usage, budgets)`` gives each served agent (each profile's its
own):

- a ``UsageRecorder``: every LLM call recorded in ``state.usage`` (SQLite in one process,
  Redis across many), priced at ``[usage.prices]`` over the dated list prices;
- with ``[budgets]``, a ``BudgetHook`` and the recorder's charge to the budgets, counted in
  the state's quota store, so they hold across processes and restarts;
- ``/usage`` for admins.

``threadline usage`` (``bots.usage_command``) prints the same report from the state the
bots write to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.agent import Agent
    from agent_core.state_factory import State
    from agent_core.usage.budget_settings import BudgetSettings
    from agent_core.usage.settings import UsageSettings
    from bots.profiles import ProfileRouter


def _profiled(served: Agent | ProfileRouter) -> list[tuple[str | None, Agent]]:
    """Each served agent once, with its profile (``None``: outside any profile)."""
    from bots.profiles import ProfileRouter

    pairs: list[tuple[str | None, Agent]] = [(None, served.served_agents()[0])]
    if isinstance(served, ProfileRouter):
        pairs = [(None, served.default), *served.agents.items()]
    seen: set[int] = set()
    unique = []
    for profile, agent in pairs:
        if id(agent) not in seen:  # one agent object serving two profiles counts once
            seen.add(id(agent))
            unique.append((profile, agent))
    return unique


def attach_usage(
    served: Agent | ProfileRouter, state: State, usage: UsageSettings, limits: BudgetSettings
) -> None:
    """Recorder, budgets and ``/usage`` on every agent of ``served`` (see the module)."""
    from agent_core.usage.budgets import Budgets
    from agent_core.usage.command import UsageCommand
    from agent_core.usage.recorder import BudgetHook, UsageRecorder

    if not usage.record:
        return
    prices = usage.price_table()
    budgets = None
    if limits.limits:
        budgets = Budgets(
            limits.limits, counters=state.rate_limiter, admins_exempt=limits.admins_exempt
        )
    for profile, agent in _profiled(served):
        model = agent.llm_service.model_name
        recorder = UsageRecorder(
            state.usage, model=model, prices=prices, profile=profile, budgets=budgets
        )
        agent.llm_middlewares.append(recorder)
        if budgets is not None:
            agent.lifecycle_hooks.insert(0, BudgetHook(budgets, profile=profile))
        agent.workflow_handler = UsageCommand(state.usage, agent.workflow_handler)
