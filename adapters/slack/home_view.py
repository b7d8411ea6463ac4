"""The Home tab's view: a person's home (``bots.home``) rendered by the same Block Kit
renderer as answers (``adapters.slack.render``), published with ``views.publish``.

A view holds at most 100 blocks, and its block ids must differ: blocks past the limit are
left out (with a line saying so) and a repeated block id is made unique.

>>> from agent_core.components import CardComponent, UiComponent
>>> view = home_view([UiComponent(rich_component=CardComponent(title="Hi", content="x"))],
...                  private_metadata="D1")
>>> view["type"], view["private_metadata"], len(view["blocks"]) > 0
('home', 'D1', True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.errors import web_client
from adapters.slack.render import render
from agent_core.components import UiComponent

MAX_VIEW_BLOCKS = 100
MORE = {"type": "context", "elements": [{"type": "mrkdwn", "text": "…and more in a chat."}]}


def home_view(components: Sequence[UiComponent], *, private_metadata: str = "") -> dict[str, Any]:
    """The ``home`` view of ``components`` (``private_metadata``: what a click needs back)."""
    blocks: list[dict[str, Any]] = []
    for component in components:
        for message in render(component):
            blocks += message.blocks
    if len(blocks) > MAX_VIEW_BLOCKS:
        blocks = [*blocks[: MAX_VIEW_BLOCKS - 1], MORE]
    seen: set[str] = set()
    for n, block in enumerate(blocks):
        block_id = block.get("block_id")
        if isinstance(block_id, str):
            if block_id in seen:
                block["block_id"] = f"{block_id}~{n}"
            seen.add(block["block_id"])
    return {"type": "home", "blocks": blocks, "private_metadata": private_metadata}


async def publish_home(client: AsyncWebClient, user_id: str, view: dict[str, Any]) -> None:
    """Show ``view`` as ``user_id``'s Home tab."""
    await web_client(client).views_publish(user_id=user_id, view=view)
