"""Where a conversation with the bot starts: the agent view and the App Home's Messages tab.

The agent's starter UI (what it yields for an empty message) becomes, in a new assistant
thread of the agent view, up to four suggested prompts
(``assistant.threads.setSuggestedPrompts``), and on the first visit to the Messages tab a
welcome posted top-level in the bot's DM.

>>> from agent_core.components import ButtonComponent, UiComponent
>>> starter_prompts([UiComponent(rich_component=ButtonComponent(label="Top", action="Top?"))])
[{'title': 'Top', 'message': 'Top?'}]
"""

from __future__ import annotations

from collections.abc import Sequence

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import web_client
from adapters.slack.markdown import truncate
from adapters.slack.render import render
from agent_core.components import ButtonComponent, ButtonGroupComponent, UiComponent
from agent_core.users import RequestContext

MAX_PROMPTS = 4
MAX_PROMPT_TITLE = 75


def starter_prompts(components: Sequence[UiComponent]) -> list[dict[str, str]]:
    """The suggested prompts of the starter UI's buttons (label -> message), at most four."""
    buttons: list[tuple[str, str]] = []
    for component in components:
        rich = component.rich_component
        if isinstance(rich, ButtonGroupComponent):
            buttons += [(b.label, b.action) for b in rich.buttons if not b.disabled]
        elif isinstance(rich, ButtonComponent):
            buttons.append((rich.label, rich.action))
    return [
        {"title": truncate(label, MAX_PROMPT_TITLE), "message": action}
        for label, action in buttons[:MAX_PROMPTS]
    ]


async def suggest_prompts(
    client: AsyncWebClient, context: RequestContext, components: Sequence[UiComponent]
) -> None:
    """Offer the starter UI's buttons as the assistant thread's suggested prompts."""
    prompts = starter_prompts(components)
    if prompts:
        meta = context.metadata
        await web_client(client).assistant_threads_setSuggestedPrompts(
            channel_id=meta["channel_id"], thread_ts=meta["thread_id"], prompts=prompts
        )


async def post_welcome(
    client: AsyncWebClient, context: RequestContext, component: UiComponent
) -> None:
    """Post one component of the welcome top-level in the Messages tab (the bot's DM)."""
    client = web_client(client)
    for message in render(component):
        if message.blocks:
            await client.chat_postMessage(
                channel=context.metadata["channel_id"], text=message.text, blocks=message.blocks
            )
