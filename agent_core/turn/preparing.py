"""``prepare``, steps 6-9: the tool context (and its enrichers), the tool schemas the asker
may use, and the system prompt (and its enhancement)."""

from __future__ import annotations

from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState


async def prepare(deps: TurnDeps, state: TurnState) -> None:
    """Steps 6-9: tool context + enrichers, tool schemas, system prompt (+ enhancement)."""
    user, conversation = state.require_user(), state.require_conversation()
    context = deps.tool_context(
        user,
        conversation_id=conversation.id,
        request_id=state.request_id,
        request=state.request_context.metadata,
        question=state.message,
        features=state.features,
    )
    for enricher in deps.context_enrichers:
        name = type(enricher).__name__
        async with deps.tracer.span(
            "agent.context.enrichment",
            metric="agent.enrichment.duration",
            tag_attributes=("enricher",),
            enricher=name,
        ):
            context = await enricher.enrich_context(context)
    state.tool_context = context
    async with deps.tracer.span(
        "agent.tool_schemas.fetch",
        metric="agent.tool_schemas.duration",
        tag_attributes=("schema_count",),
        user_id=user.id,
    ) as span:
        state.tool_schemas = await deps.tool_registry.get_schemas(user)
        span.set_attribute("schema_count", len(state.tool_schemas))
    await deps.check_tools(state.tool_schemas)
    async with deps.tracer.span(
        "agent.system_prompt.build",
        metric="agent.system_prompt.duration",
        tool_count=len(state.tool_schemas),
    ) as span:
        prompt = await deps.system_prompt_builder.build_system_prompt(user, state.tool_schemas)
        span.set_attribute("prompt_length", len(prompt or ""))
    enhancer = deps.llm_context_enhancer
    if enhancer is not None:
        name = type(enhancer).__name__
        async with deps.tracer.span(
            "agent.llm_context.enhance_system_prompt",
            metric="agent.llm_context.enhance_system_prompt.duration",
            tag_attributes=("enhancer",),
            enhancer=name,
        ):
            prompt = await enhancer.enhance_system_prompt_for(context, prompt or "", state.message)
    state.system_prompt = prompt
