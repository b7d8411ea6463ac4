"""``prepare``, steps 6-9: the tool context (and its enrichers), the tool schemas the asker
may use, and the system prompt (and its enhancement).

Tools that come from a source (an MCP server's) may be left out of a turn, a server being
down; what the sources say about it is shown to an admin asking, privately, and to no one
else (``admin_notes``)."""

from __future__ import annotations

from agent_core.components import NotificationComponent, UiComponent
from agent_core.turn.deps import TurnDeps
from agent_core.turn.state import TurnState
from agent_core.users import User


def admin_notes(user: User, notes: list[str]) -> list[UiComponent]:
    """The sources' notes as one private notice, for an admin asking; nothing for others.

    >>> admin_notes(User(id="a", group_memberships=["admin"]), ["tickets is down"])[0].audience
    'requester'
    >>> admin_notes(User(id="b"), ["tickets is down"])
    []
    """
    if not notes or not user.is_admin:
        return []
    text = "\n".join(f"- {note}" for note in notes)
    note = NotificationComponent(
        title="Some tools are left out of this answer", message=text, level="warning"
    )
    return [UiComponent.of(note, f"{note.title}\n{text}", audience="requester")]


async def prepare(deps: TurnDeps, state: TurnState) -> list[UiComponent]:
    """Steps 6-9: tool context + enrichers, tool schemas, system prompt (+ enhancement);
    returns the notes an admin asking sees about tools left out."""
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
        tools = await deps.tool_registry.offer(user)
        state.tool_schemas = tools.schemas
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
    return admin_notes(user, tools.notes)
