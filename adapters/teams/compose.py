"""The messages that carry one answer: text split under Teams' limits, the AI label with
citations and the feedback buttons on the first, cards packed into as few messages as fit.

>>> from adapters.teams.activities import ConversationRef
>>> ref = ConversationRef("https://s/", "a:1", "1", {"id": "28:b"}, {"id": "29:u"}, "t",
...                       "personal")
>>> [m["text"] for m in compose(ref, "Hello.", [])]
['Hello.']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from adapters.teams import activities
from adapters.teams.activities import Activity, ConversationRef
from adapters.teams.render import Citation
from adapters.teams.limits import MESSAGE_LIMIT, pack, payload_size, split_text


def compose(
    ref: ConversationRef,
    text: str,
    attachments: Sequence[dict[str, Any]],
    *,
    citations: Sequence[Citation] = (),
    ai_label: bool = True,
    feedback_loop: bool = True,
    limit: int = MESSAGE_LIMIT,
) -> list[Activity]:
    """The messages that carry an answer, each under ``limit``.

    The first message holds the first part of the text, the AI label with citations and the
    feedback buttons; longer text continues in further messages, and the cards follow the
    text, packed into as few messages as fit.
    """
    parts = split_text(text) if text else []
    entities = [activities.ai_entity(citations)] if ai_label else []
    channel_data = activities.FEEDBACK_LOOP if feedback_loop else None
    head = activities.message(
        ref, parts[0] if parts else None, entities=entities, channel_data=channel_data
    )
    tail = [activities.message(ref, part, entities=entities) for part in parts[1:]]
    last = tail[-1] if tail else head
    groups = pack(attachments, first_overhead=payload_size(last), limit=limit)
    if groups[0]:
        last["attachments"] = groups[0]
        last["attachmentLayout"] = "list"
    extra = [activities.message(ref, attachments=group) for group in groups[1:]]
    messages = [head, *tail, *extra]
    if not head.get("text") and not head.get("attachments") and len(messages) > 1:
        messages.remove(head)
    if not messages[0].get("text") and not messages[0].get("attachments"):
        messages[0] = activities.message(ref, "I have nothing to add.")
    return messages

