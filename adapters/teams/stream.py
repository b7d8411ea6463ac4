"""One turn's reply in Teams: components in, Teams messages out.

``TeamsReplyStream`` is Teams' ``adapters.stream.ReplyStream``. It takes the components the
agent yields and keeps the latest version of each (by id), rendered by
``adapters.teams.render``. Progress shows at once: in a personal chat through the streaming
protocol (``adapters.teams.answer.AnswerStream``: informative updates, then the answer
streaming as it is written), in group chats and channels as a typing indicator. ``finish``
sends the answer: its text, its cards (split over several messages when Teams' 40 KB limit
requires, ``adapters.teams.limits``), the AI-generated label with citations and the feedback
buttons. The answer's sources (the queries its data came from) are citations too: their
tables for everyone, their SQL as the citation's content only where the asker may see it
and nobody else reads the chat (or where the SQL is open to everyone). Admin-only detail
goes through ``PrivateDelivery`` (``adapters.teams.private``).
The turn's steps (tool calls' statuses, task tracker updates) are progress lines while they
run and, once there are two, a task list card in the answer (``adapters.teams.plan``); a
tool call that failed is also a card of the answer; a Stop leaves the steps that had not
finished ``stopped`` in the task list.

An approval (``ApprovalComponent``) is a message of its own after the answer (or the
answer itself, when the turn said nothing else), so a decision can replace it whole
(``adapters.teams.approval.update_approval``); ``on_approval(approval_id, where)`` hears
where each one went.

The message that carries the answer is an ``AnswerSlot``: give the stream one that knows what an
earlier run of the turn posted and the answer goes into that message instead of a new one.
In group chats and channels a "Working on it" card with a Stop button appears when the answer
takes longer than ``stop_button_after`` (pass ``stop_turn``); the answer then replaces it::

    async with TeamsReplyStream(connector, ref, on_stop=cancel_turn) as reply:
        async for component in agent.send_message(context, text, conversation_id=key):
            await reply.handle(component)
        await reply.finish()
    # stopped by the asker: await reply.settle(notices.STOPPED)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from adapters.notices import closing_note
from adapters.number_format import number_locale
from adapters.tasks import TaskBoard
from adapters.teams import activities, elements
from adapters.teams.activities import (
    Activity,
    Citation,
    ConversationRef,
    citation_markers,
    source_citation,
)
from adapters.teams.answer import AnswerStream
from adapters.teams.connector import ConnectorError, TeamsConnector
from adapters.teams.files import FileOffers
from adapters.teams.limits import answer_messages, text_parts
from adapters.teams.markdown import message_markdown
from adapters.teams.plan import plan_progress_line, progress_line, task_list_card
from adapters.teams.private import SENT_PRIVATELY, WITHHELD_NOTE, PrivateDelivery
from adapters.teams.render import Rendering, render
from adapters.teams.slot import AnswerSlot, PostedMessage
from agent_core.components import (
    ApprovalComponent,
    ComponentLifecycle,
    SignInComponent,
    SourcesComponent,
    TaskListComponent,
    TaskOperation,
    TaskTrackerUpdateComponent,
    ToolStatusComponent,
    UiComponent,
)

if TYPE_CHECKING:
    from adapters.stream import ReplyStream

logger = logging.getLogger(__name__)


OnApproval = Callable[[str, dict[str, Any]], Awaitable[None]]
SignInCards = Callable[[SignInComponent, ConversationRef], Awaitable[dict[str, Any] | None]]
"""Single sign-on's OAuthCard attachment of a sign-in prompt, for the asker of a reference
(None: send the ordinary card); the bot's (``bots.teams.sso``), it asks the token service."""
"""Told where an approval message went: ``(approval_id, {"activity_id": ..., ...})``."""


@dataclass(frozen=True, slots=True)
class ReplyOptions:
    """How replies behave; the defaults follow Teams' rules.

    >>> ReplyOptions(pace=0.0).max_stream_seconds
    120.0
    """

    stream: bool = True
    """Stream answers in personal chats (Teams streams nowhere else)."""
    pace: float = 1.0
    """Minimum seconds between two sends of a stream (Teams allows one per second)."""
    max_stream_seconds: float = 120.0
    typing_interval: float = 3.0
    feedback_loop: bool = True
    ai_label: bool = True
    targeted_messages: bool = False
    """Deliver admin-only detail as Teams targeted messages (preview) before trying 1:1."""
    say_when_empty: bool = True
    """A turn that shows nothing says "I have nothing to add."; ``False``: it posts nothing
    (the turn resumed after a Stopped approval: its card already says what came of it)."""


class TeamsReplyStream:
    """Renders one turn into Teams; see the module docstring.

    ``on_stop(reason)`` is called when nothing more can be sent (the user pressed Stop, or
    blocked the bot): the host cancels the turn. ``files`` offers the CSV of cut tables.
    ``slot`` is where the answer goes (default: a new message). ``stop_turn`` is the turn id
    the Stop button of a group chat's progress card carries; the card appears after
    ``stop_button_after`` seconds (``None``: never). Personal chats have Teams' own Stop
    button on the stream.

    >>> ref = ConversationRef("https://s/", "a:1", "1", {"id": "28:b"}, {"id": "29:u"}, "t",
    ...                       "personal")
    >>> TeamsReplyStream(connector=None, ref=ref).answer_text  # type: ignore[arg-type]
    ''
    """

    def __init__(
        self,
        connector: TeamsConnector,
        ref: ConversationRef,
        *,
        options: ReplyOptions | None = None,
        on_stop: Callable[[str], None] | None = None,
        files: FileOffers | None = None,
        slot: AnswerSlot | None = None,
        stop_turn: str | None = None,
        stop_button_after: float | None = 3.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_approval: OnApproval | None = None,
        sign_in_cards: SignInCards | None = None,
    ) -> None:
        self._connector = connector
        self._sign_in_cards = sign_in_cards
        self._single_sign_on: dict[str, tuple[SignInComponent, elements.Element | None]] = {}
        """Sign-in prompts single sign-on may finish, with their ordinary card (the fallback
        when no OAuthCard can be made)."""
        self._on_approval = on_approval
        self._approvals: dict[str, tuple[str, elements.Element]] = {}
        self._ref = ref
        self._options = options or ReplyOptions()
        self.slot = slot if slot is not None else AnswerSlot(connector, ref)
        self._stop_turn = stop_turn
        self._stop_button_after = stop_button_after
        self._on_stop = on_stop
        self._files = files
        self._sleep = sleep
        self._private = PrivateDelivery(connector, ref, targeted=self._options.targeted_messages)
        self._writer: AnswerStream | None = None
        if self._options.stream and ref.is_personal and not self.slot.resumed:
            self._writer = AnswerStream(
                connector,
                ref,
                pace=self._options.pace,
                max_duration=self._options.max_stream_seconds,
                clock=clock,
                sleep=sleep,
                on_stop=self._stopped,
                on_posted=self.slot.posted,
            )
        self._texts: dict[str, str] = {}
        self._fixed_texts: set[str] = set()  # text not written by the model (no AI label)
        self._cards: dict[str, elements.Element] = {}
        self._private_cards: dict[str, elements.Element] = {}
        self._sign_in = False
        """A sign-in card is among the private ones: they go to the 1:1 chat."""
        self._citations: dict[str, Citation] = {}
        self._sources: SourcesComponent | None = None
        self._csv: dict[str, tuple[str, bytes, str]] = {}
        self._typing: asyncio.Task[None] | None = None
        self._progress: asyncio.Task[None] | None = None
        self._progress_posting = False
        self._halted = False
        self.message_ids: list[str] = []
        self.private_route: str | None = None
        self.plan = TaskBoard()

    async def __aenter__(self) -> Self:
        if self._writer is None:
            self._typing = asyncio.create_task(self._keep_typing(), name="teams-typing")
            delay = self._stop_button_after
            if self._stop_turn is not None and delay is not None and not self._ref.is_personal:
                self._progress = asyncio.create_task(
                    self._show_stop_later(delay), name="teams-stop-card"
                )
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ components

    def _stopped(self, reason: str) -> None:
        logger.info("teams reply in %s halted: %s", self._ref.conversation_id, reason)
        self._halted = True
        if self._on_stop is not None:
            self._on_stop(reason)

    def _forget(self, key: str) -> None:
        self._approvals.pop(key, None)
        self._texts.pop(key, None)
        self._cards.pop(key, None)
        self._private_cards.pop(key, None)
        self._single_sign_on.pop(key, None)
        self._citations.pop(key, None)
        self._csv.pop(key, None)

    def _take_private(self, component: UiComponent, rendering: Rendering) -> None:
        prompt = component.rich_component
        if isinstance(prompt, SignInComponent):
            if prompt.exchange is not None and self._sign_in_cards is not None:
                self._single_sign_on[component.id] = (prompt, rendering.card)
                return
            self._sign_in = True
        if rendering.card is not None:
            self._private_cards[component.id] = rendering.card
        elif rendering.text:
            card = elements.card([elements.text_block(rendering.text)])
            self._private_cards[component.id] = card

    async def handle(self, component: UiComponent) -> None:
        """Take one component (or a newer version of one already seen)."""
        if self._halted or self._took_sources(component) or self._task(component.rich_component):
            return
        key = component.id
        with number_locale(self._ref.locale):
            rendering = render(component)
        if rendering is None or component.rich_component.lifecycle is ComponentLifecycle.REMOVE:
            self._forget(key)
        elif component.is_private:
            self._take_private(component, rendering)
            return  # private progress lines and citations are never shown to the room
        elif rendering.text is not None:
            self._take_text(component, rendering.text)
        elif rendering.card is not None:
            self._take_card(component, rendering.card, rendering.csv, rendering.csv_rows)
        elif rendering.citation is not None:
            self._citations[key] = rendering.citation
        elif rendering.progress and self._writer is not None:
            self._writer.set_status(rendering.progress)
        if self._writer is not None and key in self._texts:
            shown = message_markdown(self.answer_text).text
            parts = text_parts(shown) if shown else []
            self._writer.set_text(parts[0] if parts else "")

    def _take_card(
        self,
        component: UiComponent,
        card: elements.Element,
        csv: tuple[str, bytes] | None,
        csv_rows: str,
    ) -> None:
        """A card of the answer; an approval's is a message of its own (``finish``)."""
        rich, key = component.rich_component, component.id
        if isinstance(rich, ApprovalComponent):
            self._approvals[key] = (rich.approval_id, card)
            return
        self._cards[key] = card
        if csv is not None:
            self._csv[key] = (*csv, csv_rows)

    def _took_sources(self, component: UiComponent) -> bool:
        """Keep the answer's sources for ``finish`` (cited on the answer's message)."""
        rich = component.rich_component
        if not isinstance(rich, SourcesComponent) or component.is_private:
            return False
        self._sources = rich
        return True

    def _task(self, update: object) -> bool:
        """A step of the plan (or the model's stated plan): kept for the answer's task list;
        a step that starts is the stream's progress line. False for other components, and
        for a tool call's status, which is also rendered (its progress line, or its card
        when it failed)."""
        if isinstance(update, TaskListComponent) and update.as_plan:
            self._show_line(plan_progress_line(self.plan) if self.plan.apply_plan(update) else None)
            return True
        if isinstance(update, ToolStatusComponent):
            if self.plan.apply(update) and update.lifecycle is ComponentLifecycle.CREATE:
                self._show_line(progress_line(self.plan, update.id))
            return False
        if not isinstance(update, TaskTrackerUpdateComponent):
            return False
        if self.plan.apply(update) and update.operation is TaskOperation.ADD_TASK:
            self._show_line(progress_line(self.plan, update.task_id or ""))
        return True

    def _show_line(self, line: str | None) -> None:
        if line is not None and self._writer is not None:
            self._writer.set_status(line)

    @property
    def _plan_cards(self) -> list[elements.Element]:
        """The task list, once the turn ran more than one step."""
        return [task_list_card(self.plan)] if len(self.plan) > 1 else []

    def _take_text(self, component: UiComponent, text: str) -> None:
        self._texts[component.id] = text
        if not getattr(component.rich_component, "generated", True):
            self._fixed_texts.add(component.id)

    @property
    def _model_wrote(self) -> bool:
        """Some of the answer's text came from the model (a command's answer did not)."""
        return any(
            key not in self._fixed_texts for key, text in self._texts.items() if text.strip()
        )

    @property
    def answer_text(self) -> str:
        return "\n\n".join(text for text in self._texts.values() if text.strip())

    # ------------------------------------------------------------------ typing

    async def _keep_typing(self) -> None:
        while True:
            try:
                await self._connector.reply(
                    self._ref.conversation_id,
                    self._ref.activity_id or "",
                    activities.typing(self._ref),
                )
            except ConnectorError as error:
                if error.blocked:
                    self._stopped("blocked")
                    return
                logger.debug("typing indicator failed: %s", error)
            await self._sleep(self._options.typing_interval)

    async def _stop_typing(self) -> None:
        if self._typing is not None:
            self._typing.cancel()
            await asyncio.gather(self._typing, return_exceptions=True)
            self._typing = None
        await self._stop_progress()

    # ------------------------------------------------------------------ Stop card

    async def _show_stop_later(self, delay: float) -> None:
        await self._sleep(delay)
        self._progress_posting = True  # from here on, finishing waits for the card's id
        try:
            await self.slot.show_progress(self._stop_turn)
        except ConnectorError as error:
            logger.info("could not show the Stop card: %s", error)

    async def _stop_progress(self) -> None:
        task, self._progress = self._progress, None
        if task is None:
            return
        if not self._progress_posting:
            task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    # ------------------------------------------------------------------ finish

    @property
    def answer_id(self) -> str | None:
        """The id of the message that carries the answer, once ``finish`` sent it."""
        return self.message_ids[0] if self.message_ids else None

    async def finish(self) -> None:
        """Send the answer (``answer_id`` then names the message that carries it)."""
        await self._stop_typing()
        if self._halted:
            return
        approvals = [
            (approval_id, activities.message(self._ref, attachments=[elements.attachment(card)]))
            for approval_id, card in self._approvals.values()
        ]
        alone = bool(approvals) and self._says_nothing_else()
        if not (self._options.say_when_empty or approvals or self._writer or self.slot.current):
            if self._says_nothing_else():
                return
        messages = [approvals[0][1]] if alone else await self._compose()
        first, rest = messages[0], messages[1:]
        try:
            if self._writer is not None:
                answer_id = await self._writer.close(first)
                if answer_id and self._writer.mode == "streaming":  # a closed stream is a message
                    await self.slot.posted(PostedMessage(answer_id, "message"))
            else:
                answer_id = await self.slot.fill(first)
            if answer_id:
                self.message_ids.append(answer_id)
            for message in rest:
                if self._halted or (self._writer is not None and self._writer.stopped):
                    break
                self.message_ids.append(await self._send(message))
            await self._post_approvals(approvals, answer_id if alone else None)
        except ConnectorError as error:
            if error.blocked:
                self._stopped("blocked")
            logger.error("teams reply failed: %s", error)

    def _says_nothing_else(self) -> bool:
        """Whether the turn shows nothing but its approvals (then the first is the answer)."""
        return not (
            self.answer_text.strip()
            or self._cards
            or self._plan_cards
            or self._citations
            or self._private_cards
        )

    async def _post_approvals(
        self, approvals: list[tuple[str, Activity]], first_id: str | None
    ) -> None:
        """Each approval as its own message (the first one already is, as the answer, when
        ``first_id`` names it), and where it went told to ``on_approval``."""
        for index, (approval_id, message) in enumerate(approvals):
            if self._halted:
                return
            posted = first_id if index == 0 and first_id else await self._send(message)
            if first_id is None or index > 0:
                self.message_ids.append(posted)
            if self._on_approval is not None and posted:
                where = {"platform": "teams", "activity_id": posted}
                await self._on_approval(
                    approval_id, where | {"conversation": self._ref.to_record()}
                )

    async def _send(self, message: Activity) -> str:
        return await self._connector.reply(
            self._ref.conversation_id, self._ref.activity_id or "", message
        )

    async def _compose(self) -> list[Activity]:
        self.plan.end()
        lifted = message_markdown(self.answer_text)
        cards = self._plan_cards
        cards += [elements.card([table], full_width=True) for table in lifted.tables]
        cards += list(self._cards.values())
        note = None
        await self._send_sign_in_cards()
        if self._private_cards:
            if self._private.inline:
                cards += list(self._private_cards.values())
            else:
                self.private_route = await self._private.deliver(
                    [elements.attachment(c) for c in self._private_cards.values()],
                    personal=self._sign_in,
                )
                note = WITHHELD_NOTE if self.private_route == "withheld" else None
        citations, markers = self._cited(bool(lifted.text))
        text = "\n\n".join(part for part in (lifted.text, markers, note) if part)
        if not text and not cards and self.private_route == "personal":
            text = SENT_PRIVATELY  # not "I have nothing to add.": the answer went 1:1
        return answer_messages(
            self._ref,
            text,
            [elements.attachment(c) for c in cards] + await self._file_offers(),
            citations=citations,
            ai_label=self._options.ai_label and bool(lifted.text) and self._model_wrote,
            feedback_loop=self._options.feedback_loop and bool(lifted.text),
        )

    async def _send_sign_in_cards(self) -> None:
        """Single sign-on's OAuthCards, each its own message to the asker alone: in the
        personal chat as it is, elsewhere targeted to them (Teams asks for the token
        silently only in the conversation the card is in, so a 1:1 chat would take the
        person away). When no OAuthCard can be made, or the targeted message is refused,
        the ordinary sign-in card goes the usual private way (the 1:1 chat)."""
        for key, (prompt, fallback) in list(self._single_sign_on.items()):
            assert self._sign_in_cards is not None
            attachment = await self._sign_in_cards(prompt, self._ref)
            if attachment is not None and await self._send_privately(attachment):
                continue
            if fallback is not None:
                self._sign_in = True
                self._private_cards[key] = fallback
        self._single_sign_on.clear()

    async def _send_privately(self, attachment: dict[str, Any]) -> bool:
        message = activities.message(self._ref, None, attachments=[attachment])
        try:
            if self._ref.is_personal:
                await self._send(message)
            else:
                await self._connector.send_targeted(self._ref.conversation_id, message)
        except ConnectorError as error:
            logger.info("teams: the sign-in card was refused (%s)", error)
            return False
        return True

    def _cited(self, has_text: bool) -> tuple[list[Citation], str]:
        """The message's citations (links, then the answer's sources) and the in-text
        markers of the sources (only a labelled answer with text carries citations)."""
        citations = list(self._citations.values())
        sources = self._sources
        if sources is None or not sources.sources or not has_text or not self._options.ai_label:
            return citations, ""
        show_query = sources.queries_public or (
            sources.asker_sees_queries and self._ref.is_personal
        )
        first = len(citations) + 1
        citations += [source_citation(s, show_query=show_query) for s in sources.sources]
        return citations, citation_markers(first, len(sources.sources))

    async def _file_offers(self) -> list[dict[str, Any]]:
        """Consent cards for the CSV of cut tables (Teams allows files in personal chats)."""
        if self._files is None or not self._ref.is_personal:
            return []
        return [
            await self._files.offer(
                name,
                content,
                conversation=self._ref.thread_key,
                description=f"{name}: {rows}, as CSV" if rows else None,
            )
            for name, content, rows in self._csv.values()
        ]

    async def settle(self, note: str) -> None:
        """End the answer early: the text the asker already saw ends with ``note``
        (``_(Stopped.)_``, as in Slack), or ``note`` alone replaces a progress card, with
        the plan's task list (its unfinished steps ``stopped``) when it had two steps or
        more; nothing is posted when nothing was and there was no plan."""
        shown = self._writer.shown_text.rstrip() if self._writer is not None else ""
        await self.aclose()
        ending = f"{shown}{closing_note(note)}" if shown else note
        self.plan.end(stopped=True)
        plan = [elements.attachment(card) for card in self._plan_cards]
        await self.slot.settle(ending, post_if_empty=bool(plan), attachments=plan)

    async def aclose(self) -> None:
        """Stop background sends (the turn ended or was cancelled)."""
        await self._stop_typing()
        if self._writer is not None:
            await self._writer.aclose()


if TYPE_CHECKING:

    def _implements_the_protocol(stream: TeamsReplyStream) -> ReplyStream:
        return stream  # mypy checks TeamsReplyStream against adapters.stream.ReplyStream
