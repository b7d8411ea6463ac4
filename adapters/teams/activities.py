"""Outgoing Teams activities (wire JSON): messages, typing, the streaming protocol, the
AI-generated label with citations, and the feedback loop.

A ``ConversationRef`` is what a turn saves from the inbound activity to reply later, from a
background task, without holding on to the request::

    >>> from adapters.teams.payloads import Activity as Inbound
    >>> ref = ConversationRef.from_activity(Inbound.model_validate({"type": "message",
    ...     "id": "1", "serviceUrl": "https://smba/", "channelId": "msteams",
    ...     "from": {"id": "29:u"}, "recipient": {"id": "28:b"},
    ...     "conversation": {"id": "a:1", "conversationType": "personal", "tenantId": "t"}}))
    >>> stream_chunk(ref, "s1", "Hel", 2)["entities"]
    [{'type': 'streaminfo', 'streamId': 's1', 'streamType': 'streaming', 'streamSequence': 2}]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from adapters.teams import elements
from adapters.teams.context import conversation_type_of, tenant_of
from adapters.teams.escape import escape_message
from adapters.teams.payloads import Account
from adapters.teams.payloads import Activity as Inbound
from agent_core.components import Source

Activity = dict[str, Any]
StreamType = Literal["informative", "streaming", "final"]


@dataclass(slots=True)
class Citation:
    """A source the answer drew on (Teams shows it in the message's references).

    ``content`` is an Adaptive Card (``elements.card``) Teams opens from the reference, e.g.
    the SQL of a query; ``url`` may be empty for sources that are not pages.

    >>> Citation("Pricing policy", "https://wiki/pricing").abstract
    ''
    """

    title: str
    url: str = ""
    abstract: str = ""
    content: dict[str, Any] | None = None


MAX_CITATIONS = 20
"""Citations Teams shows on one message."""
MAX_CITATION_ABSTRACT = 160
MAX_CITATION_TITLE = 80
MAX_CITED_SQL = 4000
"""Characters of SQL one citation's card shows (the whole message must stay under 40 KB
with up to 20 of them)."""


def source_citation(source: Source, *, show_query: bool) -> Citation:
    """The citation of one query: its tables and rows for everyone; with ``show_query`` its
    SQL as the citation's content (cut to ``MAX_CITED_SQL`` with a note).

    >>> cited = source_citation(Source(tool="run_sql", query="SELECT 1", tables=["t"], rows=2),
    ...                         show_query=False)
    >>> cited.title, cited.abstract, cited.content is None
    ('SQL query', 't · 2 rows', True)
    """
    abstract = " · ".join(part for part in (", ".join(source.tables), source.rows_text()) if part)
    content = None
    if show_query:
        sql = source.query.strip()
        body = [elements.plain_block(abstract or "SQL query", weight="Bolder")]
        if len(sql) > MAX_CITED_SQL:
            sql = sql[: MAX_CITED_SQL - 1].rstrip() + "…"
            body.append(
                elements.text_block(
                    "The query is longer; this is its start.", subtle=True, size="Small"
                )
            )
        body.append(elements.monospace_block(sql))
        content = elements.card(body, fallback_text=abstract or "SQL query")
    return Citation(title="SQL query", abstract=abstract or "SQL query", content=content)


def citation_markers(first: int, count: int) -> str:
    """The in-text markers Teams links to citations ``first`` .. ``first + count - 1``
    (only those it shows).

    >>> citation_markers(2, 2)
    'Sources: [2] [3]'
    """
    numbers = range(first, min(first + count, MAX_CITATIONS + 1))
    return "Sources: " + " ".join(f"[{n}]" for n in numbers) if numbers else ""


def _account(account: Account | None) -> dict[str, Any]:
    if account is None:
        return {}
    wire = account.model_dump(mode="json", exclude_unset=True)
    return {k: v for k, v in wire.items() if k in ("id", "name", "aadObjectId", "role")}


@dataclass(frozen=True, slots=True)
class ConversationRef:
    """Where and to whom a turn replies: saved from the inbound activity.

    >>> ConversationRef("https://smba/", "19:g@thread.v2", "1", {"id": "28:b"}, {"id": "29:u"},
    ...                 "t1", "groupChat").thread_key
    'teams:t1:19:g@thread.v2'
    """

    service_url: str
    conversation_id: str
    activity_id: str | None
    bot: dict[str, Any]
    user: dict[str, Any]
    tenant_id: str
    conversation_type: str
    channel_id: str = "msteams"
    locale: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_activity(cls, activity: Inbound) -> ConversationRef:
        """The reference of a checked activity (the model ``read_activity`` returns)."""
        extra = activity.model_extra or {}
        locale = extra.get("locale")
        return cls(
            service_url=activity.serviceUrl,
            conversation_id=activity.conversation.id,
            activity_id=activity.id,
            bot=_account(activity.recipient),
            user=_account(activity.sender),
            tenant_id=tenant_of(activity),
            conversation_type=conversation_type_of(activity),
            channel_id=str(extra.get("channelId") or "msteams"),
            locale=locale if isinstance(locale, str) else None,
        )

    @property
    def is_personal(self) -> bool:
        return self.conversation_type == "personal"

    @property
    def record_key(self) -> str:
        """Where the conversation's reference is kept (``records``), for proactive messages."""
        return reference_key(self.tenant_id, self.conversation_id)

    def to_record(self) -> dict[str, Any]:
        """JSON for a durable store; ``from_record`` reads it back (without ``activity_id``:
        a proactive message starts its own thread of replies).

        >>> ref = ConversationRef("https://s/", "a:1", "9", {"id": "28:b"}, {"id": "29:u"}, "t",
        ...                       "personal")
        >>> ConversationRef.from_record(ref.to_record()) == replace(ref, activity_id=None)
        True
        """
        return {k: v for k, v in asdict(self).items() if k != "activity_id"}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ConversationRef:
        known = {k: record[k] for k in cls.__dataclass_fields__ if k in record}
        known["activity_id"] = None
        return cls(**known)

    def proactive(self) -> ConversationRef:
        """The same conversation, not replying to any activity."""
        return replace(self, activity_id=None)

    @property
    def thread_key(self) -> str:
        """The agent's conversation id for this conversation (see ``context.thread_key``)."""
        return f"teams:{self.tenant_id}:{self.conversation_id}"


def reference_key(tenant_id: str, conversation_id: str) -> str:
    """The ``records`` key of a conversation reference.

    >>> reference_key("t1", "19:g@thread.v2")
    'teams:ref:t1:19:g@thread.v2'
    """
    return f"teams:ref:{tenant_id}:{conversation_id}"


def answer_key(tenant_id: str, conversation_id: str, message_id: str) -> str:
    """The ``records`` key naming the turn whose answer is message ``message_id`` (Teams'
    feedback names only the rated message).

    >>> answer_key("t1", "a:1", "1700000000001")
    'teams:answer:t1:a:1:1700000000001'
    """
    return f"teams:answer:{tenant_id}:{conversation_id}:{message_id}"


def _base(ref: ConversationRef, kind: str) -> Activity:
    activity: Activity = {
        "type": kind,
        "from": ref.bot,
        "recipient": ref.user,
        "conversation": {"id": ref.conversation_id},
        "channelId": ref.channel_id,
    }
    if ref.activity_id:
        activity["replyToId"] = ref.activity_id
    if ref.locale:
        activity["locale"] = ref.locale
    return activity


def typing(ref: ConversationRef) -> Activity:
    return _base(ref, "typing")


def message(
    ref: ConversationRef,
    text: str | None = None,
    *,
    attachments: Sequence[Mapping[str, Any]] = (),
    entities: Sequence[Mapping[str, Any]] = (),
    channel_data: Mapping[str, Any] | None = None,
) -> Activity:
    """A message; ``text`` is Teams markdown (escaped here, the last step:
    ``escape.escape_message``), cards ride as ``attachments``."""
    activity = _base(ref, "message")
    if text:
        activity["text"] = escape_message(text)
        activity["textFormat"] = "markdown"
    if attachments:
        activity["attachments"] = [dict(a) for a in attachments]
        activity["attachmentLayout"] = "list"
    if entities:
        activity["entities"] = [dict(e) for e in entities]
    if channel_data:
        activity["channelData"] = dict(channel_data)
    return activity


def _stream_info(kind: StreamType, stream_id: str | None, sequence: int | None) -> dict[str, Any]:
    info: dict[str, Any] = {"type": "streaminfo"}
    if stream_id is not None:
        info["streamId"] = stream_id
    info["streamType"] = kind
    if sequence is not None:
        info["streamSequence"] = sequence
    return info


def _channel_stream_data(info: Mapping[str, Any]) -> dict[str, Any]:
    # Teams also reads the stream fields from channelData (older clients only from there).
    return {k: v for k, v in info.items() if k != "type"}


def stream_informative(
    ref: ConversationRef, text: str, sequence: int, stream_id: str | None = None
) -> Activity:
    """An informative update (the blue progress line); the first one starts the stream."""
    info = _stream_info("informative", stream_id, sequence)
    activity = typing(ref)
    shown = escape_message(text[:1000])
    activity.update(text=shown, entities=[info], channelData=_channel_stream_data(info))
    return activity


def stream_chunk(ref: ConversationRef, stream_id: str, text: str, sequence: int) -> Activity:
    """A streaming chunk: the full text so far, escaped (``escape.escape_message``: the
    escaped text of a longer answer still begins with this one's)."""
    info = _stream_info("streaming", stream_id, sequence)
    activity = typing(ref)
    shown = escape_message(text)
    activity.update(text=shown, entities=[info], channelData=_channel_stream_data(info))
    return activity


def stream_final(ref: ConversationRef, stream_id: str, final: Activity) -> Activity:
    """Turn ``final`` (a ``message``) into the stream's closing message."""
    info = _stream_info("final", stream_id, None)
    activity = dict(final)
    activity["entities"] = [info, *activity.get("entities", [])]
    activity["channelData"] = {**activity.get("channelData", {}), **_channel_stream_data(info)}
    return activity


def ai_entity(citations: Sequence[Citation] = ()) -> dict[str, Any]:
    """The schema.org Message entity that labels a message AI-generated, with its citations."""
    entity: dict[str, Any] = {
        "type": "https://schema.org/Message",
        "@type": "Message",
        "@context": "https://schema.org",
        "@id": "",
        "additionalType": ["AIGeneratedContent"],
    }
    if citations:
        entity["citation"] = [
            {"@type": "Claim", "position": index, "appearance": _appearance(citation)}
            for index, citation in enumerate(citations[:MAX_CITATIONS], start=1)
        ]
    return entity


def _appearance(citation: Citation) -> dict[str, Any]:
    appearance: dict[str, Any] = {
        "@type": "DigitalDocument",
        "name": citation.title[:MAX_CITATION_TITLE],
        "abstract": citation.abstract[:MAX_CITATION_ABSTRACT],
    }
    if citation.url:
        appearance["url"] = citation.url
    if citation.content is not None:
        appearance["text"] = json.dumps(citation.content, separators=(",", ":"))
        appearance["encodingFormat"] = "application/vnd.microsoft.card.adaptive"
    return appearance
