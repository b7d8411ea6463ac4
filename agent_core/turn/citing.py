"""The answer's sources: the queries the turn's tools ran, cited once with the final answer.

Tools return ``ToolResult.sources``; ``act`` collects those of successful calls into
``TurnState.sources``; ``think`` shows them (``sources_component``) just before the final
text, so a channel can attach them to the answer's message. Table names are for everyone;
whether the SQL may be shown is the ``tool_arguments`` feature's to say.
"""

from __future__ import annotations

from agent_core.components import Source, SourcesComponent, UiComponent
from agent_core.config import UiFeature
from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState


def sources_component(deps: TurnDeps, state: TurnState) -> UiComponent | None:
    """The turn's sources (each query once), or None when no tool cited any."""
    if not state.sources:
        return None
    unique: dict[str, Source] = {}
    for source in state.sources:
        unique.setdefault(source.query.strip(), source)
    feature = UiFeature.TOOL_ARGUMENTS
    features = deps.config.ui_features
    rich = SourcesComponent(
        sources=list(unique.values()),
        queries_public=features.feature_group_access.get(feature.value) == []
        and features.audience_of(feature) == "everyone",
        asker_sees_queries=state.can(feature),
    )
    return UiComponent.of(rich, rich.summary())
