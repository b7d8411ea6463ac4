"""Tool context enrichers: add data to ``ToolContext.metadata`` once per turn."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.context import ToolContext


class ToolContextEnricher:
    """Runs once per turn, before tool schemas are fetched; return the (mutated) context.

    >>> class Locale(ToolContextEnricher):
    ...     async def enrich_context(self, context):
    ...         context.metadata["locale"] = "en-GB"
    ...         return context
    """

    async def enrich_context(self, context: ToolContext) -> ToolContext:
        return context
