"""``SlackBot``: the listeners that turn Slack events and clicks into durable turns.

    app_mention            -> a turn in the mention's thread (first mention inside a human
                              thread reads the thread for context)
    message (DM)           -> a turn in the DM thread
    message (in a thread)  -> a follow-up, when the bot is already part of that thread;
                              another app's message there is kept for the next turn
                              (``ThreadTranscript``, after the ack)
    slash command          -> a thread the bot starts, or a private answer
    /approve, /deny <id>   -> the Home's Approve / Deny typed (``bots.slack.home``): the
                              approval's own decision for the signed typist, to them alone
    /schedule              -> a private turn answered by the schedule commands
                              (``bots.slack.schedules``); this process also dispatches
                              due schedules (``BotSchedules``) beside its turn worker
    feedback buttons       -> ``agent.record_feedback`` (audit log + ``on_feedback`` hooks)
    Approve / Deny / Stop  -> ``bots.approvals``: decided by the agent (the clicker resolved
      on an approval          from the signed click); the message is updated in place, a
                              refusal told to the clicker alone, the turn resumed in the
                              thread by whichever process picks it up
    Stop button            -> ``request_stop`` of the turn it carries (on whichever process
                              runs it; only the asker's click counts)
    "Connect <server>"     -> acked only: the button opens the sign-in page; the sign-in
                              comes back to ``/oauth/mcp/callback`` (``ask_again``)
    "Show query"           -> the queries behind an answer, to the clicker alone, when the
                              clicker (resolved at the click) may see tool arguments
    action buttons         -> a turn asking the button's message on the clicker's behalf
    message shortcut       -> "Ask Threadline about this": a turn as the asker about the
                              message (quoted as data), in its thread
                              (``bots.slack.message_action``)
    assistant_thread_started -> suggested prompts from the agent's starter UI
    function_executed      -> the Workflow Builder step "Ask Threadline": a durable turn
      (ask_threadline)        as the workflow's person, ending the step
                              (``bots.slack.workflow``)
    app_home_opened (Messages tab, first visit) -> the agent's welcome, once
    app_home_opened (Home tab) -> the person's home (``bots.slack.home``); its buttons run
                              their commands as the clicker, then it is published again
    user_change / subteam_* -> identity cache invalidation

Payloads are read by ``adapters.slack`` (``context``, ``controls``); every reply goes out
through it too (``turns`` -> ``stream`` / ``slot``, ``home``). Each accepted message is
recorded with ``turns.accept`` *before* Slack gets its ack (bolt acks when the listener
returns: ``process_before_response``). The delivery key (team, channel, message ts) is
recorded with the turn in one atomic step, so Slack's retries, and a mention Slack also
delivers as a plain ``message``, are dropped on any process. Events that are not turns are
deduplicated with ``state.dedupe``.

When the state backend is down the delivery is still acked and the asker of every message
that would have been answered is told plainly that Threadline is temporarily unavailable:
mentions, DMs, commands, and follow-ups in threads the bot takes part in (this process's
memory of them, else Slack's own record of the thread). A retry of a delivery already told
is not told twice (``ChannelRuntime.tell_unavailable``). The next delivery after the backend
returns is answered as usual.

A listener that fails (a payload bolt accepted but a converter found malformed, a bug) is
logged once and its delivery acknowledged: Slack would only retry it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import aiohttp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.notices import UNAVAILABLE
from adapters.slack.approval import (
    APPROVAL_ACTION,
    approval_click_of,
    approval_message,
)
from adapters.slack.context import (
    PRIVATE_THREAD,
    MalformedPayload,
    action_context,
    app_message_in_thread,
    asker_id,
    assistant_thread_context,
    command_context,
    command_question,
    conversation_id,
    delivery_key,
    event_context,
    home_context,
    is_from_person,
    mention_in_thread,
    message_text,
    reply_thread,
    user_key,
    workspace_of,
)
from adapters.slack.controls import (
    FEEDBACK_ACTION,
    SHOW_QUERY_ACTION,
    STOP_ACTION,
    button_message_of,
    feedback_of,
    show_query_of,
    stop_request_of,
)
from adapters.slack.elements import ACTION_BUTTON, SIGN_IN_BUTTON
from adapters.slack.escape import escape
from adapters.slack.files import shared_files
from adapters.slack.history import HistoryGate, ThreadContext, bot_in_thread
from adapters.slack.home import post_welcome, suggest_prompts
from adapters.slack.identity import INVALIDATING_EVENTS, SlackUserResolver
from adapters.slack.limits import SlackMessage
from adapters.slack.message_action import read_message_action
from adapters.slack.payloads import (
    AssistantThreadEvent,
    BlockActions,
    EventCallback,
    HomeEvent,
    MessageEvent,
    SlackDelivery,
    SlashCommand,
    read_delivery,
)
from adapters.slack.places import PLACE_EVENTS, SlackPlaces
from adapters.slack.render import query_messages
from adapters.slack.slot import AnswerSlot
from adapters.slack.sources import GONE, NOT_ALLOWED, QueryRecords, show_privately
from adapters.slack.threads import ThreadMembership, ThreadTranscript
from adapters.slack.workflow import ASK_STEP
from agent_core.channel import ChannelMetadata, read_metadata
from agent_core.clock import Clock
from agent_core.components import ApprovalComponent
from agent_core.config import UiFeature
from agent_core.errors import StateUnavailableError, log_failure
from agent_core.mcp.hub import SignedIn
from agent_core.schedules.settings import ScheduleSettings
from agent_core.state import Flag
from agent_core.state_factory import State, StateSettings, build_state
from bots.agents import ServedAgent
from bots.erasing import channel_steps
from bots.files import SharedFiles
from bots.metrics import ChannelMetrics
from bots.runtime import ChannelRuntime, Shared
from bots.slack.clients import (
    DELIVERY,
    Workspace,
    WorkspaceClients,
    build_bolt_app,
    default_clients,
)
from bots.slack.entry_points import ASK_ABOUT_MESSAGE, DECISION_COMMANDS
from bots.slack.home import SlackHome, is_home_click
from bots.slack.kinds import SlackAsked
from bots.slack.manifest import SCHEDULE_COMMAND
from bots.slack.message_action import asked_about
from bots.slack.message_action import dedupe_key as shortcut_key
from bots.slack.port import SlackPort
from bots.slack.schedules import SlackSchedules
from bots.slack.settings import SlackSettings
from bots.slack.turns import SlackWing
from bots.slack.workflow import WorkflowSteps
from bots.uninstall import erase_workspace, slack_workspace

log = logging.getLogger(__name__)

ON_IT = ":hourglass_flowing_sand: On it…"
WELCOME_TTL = 90 * 24 * 3600.0
Ack = Callable[..., Awaitable[Any]]
Listener = Callable[..., Awaitable[None]]


class SlackBot:
    """An ``Agent`` and a ``State`` behind a bolt ``AsyncApp`` (``bot.app``); see the module
    docstring. ``await bot.open()`` starts this process's turn worker.

    >>> from agent_core import (Agent, InMemoryAgentMemory, ScriptedLlmService,
    ...                         StaticUserResolver, ToolRegistry, User)
    >>> agent = Agent(llm_service=ScriptedLlmService(["hi"]), tool_registry=ToolRegistry(),
    ...               user_resolver=StaticUserResolver(User(id="u")),
    ...               agent_memory=InMemoryAgentMemory())
    >>> bot = SlackBot(agent, SlackSettings(bot_token="xoxb-1", signing_secret="s"))
    >>> bot.app.name, bot.state.backend
    ('threadline.slack.bolt', 'memory')
    """

    def __init__(
        self,
        agent: ServedAgent,
        settings: SlackSettings,
        *,
        state: State | None = None,
        clients: WorkspaceClients | None = None,
        metrics: ChannelMetrics | None = None,
        files: SharedFiles | None = None,
        schedules: ScheduleSettings | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.agent = agent
        self.settings = settings
        state = state or build_state(StateSettings(ephemeral=True))
        self.clients = clients or default_clients(settings, state, clock=clock)
        self.client = self.clients.default
        self.threads = ThreadMembership(state.cache, shared=state.backend == "redis")
        self.queries = QueryRecords(state.cache)
        self.history = HistoryGate(state.cache, interval=settings.history_interval)
        self.transcript = ThreadTranscript(state.cache)
        self.places = SlackPlaces(state.cache)
        self.steps = WorkflowSteps(agent, self.clients)
        self.runtime = ChannelRuntime(
            agent,
            SlackPort(self.clients),
            settings,
            self._wing,
            state=state,
            metrics=metrics,
            files=files,
            schedules=schedules,
            clock=clock,
            refreshes_homes=True,
        )
        self.state, self.metrics, self.turns = state, self.runtime.metrics, self.runtime.turns
        self.approvals, self.schedules = self.runtime.approvals, self.runtime.schedules
        assert self.runtime.changes is not None
        self.home = SlackHome(
            self.runtime.home, state.cache, self.runtime.changes, self.clients.client_for
        )
        self.app = build_bolt_app(
            settings, self.clients, state.cache, on_removed=self._on_uninstalled
        )
        self._own_session = False
        self._counters: dict[str, Any] = {}
        self._register()

    def _wing(self, shared: Shared) -> SlackWing:
        """Slack's part of answering turns (``bots.slack.turns``), of the runtime's pieces."""
        settings = self.settings
        return SlackWing(
            self.clients,
            self.threads,
            ThreadContext(self.transcript, self.history, limit=settings.history_messages),
            queries=self.queries,
            on_approval=shared.approvals.note,
            steps=self.steps,
            stop_button_after=settings.stop_button_after,
            flush_chars=settings.flush_chars,
            stream_interval=settings.stream_interval,
            places=self.places,
            place_policy=shared.place_policy,
            schedules=SlackSchedules(
                shared.schedules,
                self.clients,
                admins=settings.admin_users,
                stop_button_after=settings.stop_button_after,
                flush_chars=settings.flush_chars,
                stream_interval=settings.stream_interval,
                privately=self._answer_privately,
            ),
        )

    async def open(self) -> None:
        """Share one HTTP connection pool among all Web API calls and start the runtime
        (the turn worker, the sweep, the dispatcher) and the Home refresher (call in the
        event loop)."""
        if self.client.session is None:
            self.client.session = aiohttp.ClientSession()
            self._own_session = True
        self.clients.share_session(self.client.session)
        self.runtime.open()
        self.home.start()

    async def close(self, *, timeout: float = 30.0) -> None:
        """Stop the Home refresher and the runtime (running turns finish, up to ``timeout``
        s), then release the pool."""
        await self.home.stop()
        await self.runtime.close(timeout=timeout)
        if self._own_session and self.client.session is not None:
            await self.client.session.close()
            self.clients.share_session(None)
            self._own_session = False

    async def idle(self, *, timeout: float = 30.0) -> None:
        """Until every queued turn is answered (tests, benchmarks)."""
        await self.runtime.idle(timeout=timeout)

    async def _on_uninstalled(self, context: AsyncBoltContext, event: str) -> None:
        """The installation's tokens are gone; erase its workspace if configured so."""
        workspace = slack_workspace(
            context.enterprise_id, context.team_id, context.is_enterprise_install
        )
        if self.settings.erase_on_uninstall and workspace is not None:
            channels = channel_steps(self.state)  # Slack's thread transcripts
            await erase_workspace(self.state, workspace, reason=event, channels=channels)

    def _count(self, kind: str) -> None:
        """Count an event (the counter of each kind looked up once: every event pays this)."""
        counter = self._counters.get(kind)
        if counter is None:
            counter = self._counters[kind] = self.metrics.events.labels(kind=kind)
        counter.inc()

    def _register(self) -> None:
        """Every listener, by what it listens to (bolt dispatches; the catch-all goes last)."""
        events: dict[str, Listener] = {
            "app_mention": self._on_mention,
            "message": self._on_message,
            "assistant_thread_started": self._on_assistant_thread_started,
            "app_home_opened": self._on_home_opened,
            **dict.fromkeys(sorted(INVALIDATING_EVENTS), self._on_identity_event),
            **dict.fromkeys(sorted(PLACE_EVENTS), self._on_place_event),
        }
        actions: dict[str | re.Pattern[str], Listener] = {
            FEEDBACK_ACTION: self._on_feedback,
            STOP_ACTION: self._on_stop,
            SHOW_QUERY_ACTION: self._on_show_query,
            re.compile(f"^{APPROVAL_ACTION}:"): self._on_approval,
            re.compile(f"^{ACTION_BUTTON}:"): self._on_button,
            SIGN_IN_BUTTON: self._on_sign_in_button,
        }
        if self.settings.mode == "socket":  # over HTTP, bots.slack.ingress read it already
            self.app.use(self._read_once)
        for kind, listener in events.items():
            self.app.event(kind)(listener)
        for action, listener in actions.items():
            self.app.action(action)(listener)
        self.app.command(self.settings.command)(self._on_command)
        self.app.command(SCHEDULE_COMMAND)(self._on_schedule_command)
        for decision in DECISION_COMMANDS:
            self.app.command(decision)(self._on_decision_command)
        self.app.function(ASK_STEP)(self._on_function)
        self.app.shortcut(ASK_ABOUT_MESSAGE)(self._on_message_shortcut)
        self.app.event(re.compile(".*"))(self._ignore)  # other events: acked and dropped
        self.app.error(self._on_error)

    # --- questions: durable turns -------------------------------------------------------------

    async def _accept(
        self,
        client: AsyncWebClient,
        queued: SlackAsked,
        dedupe_key: str | None = None,
        *,
        joins: Flag | None = None,
    ) -> None:
        """Record the turn before the ack (with ``joins``, the thread it joins: one step);
        while the state is down, ack anyway and tell the asker plainly (after the ack: the
        post is not on its path)."""
        try:
            await self._record(queued, dedupe_key, joins)
        except StateUnavailableError as error:
            self._unavailable(client, queued, error, dedupe_key)
            return
        if joins is not None:
            self.threads.joined(joins)

    async def _record(
        self, queued: SlackAsked, dedupe_key: str | None = None, joins: Flag | None = None
    ) -> str | None:
        return await self.turns.accept(
            queued.turn_key,
            queued.question(),
            owner=queued.owner,
            dedupe_key=dedupe_key,
            flag=joins,
        )

    def _unavailable(
        self,
        client: AsyncWebClient,
        queued: SlackAsked,
        error: StateUnavailableError,
        delivery: str | None = None,
    ) -> None:
        """Tell the asker the state is down (after the ack), once per delivery."""
        log.warning("slack: could not accept a turn from %s: %s", queued.owner, error)
        if self.runtime.tell_unavailable(delivery):  # Slack retries a delivery: told once
            self.turns.background(AnswerSlot(client, queued.target()).settle(UNAVAILABLE))

    async def _unavailable_if_in_thread(
        self,
        client: AsyncWebClient,
        queued: SlackAsked,
        error: StateUnavailableError,
        delivery: str,
    ) -> None:
        """A thread reply while the state is down: told only when the bot takes part in the
        thread (as this process remembers, else as Slack's record of the thread says, which
        is then remembered: reading threads is paced, once a minute per workspace)."""
        meta = queued.context
        channel, thread = str(meta["channel_id"]), str(meta["thread_id"])
        if not self.threads.joined_here(queued.team, channel, thread):
            if not await bot_in_thread(
                client,
                self.history,
                team=queued.team,
                channel=channel,
                thread_ts=thread,
                bot_user_id=queued.bot_user_id,
            ):
                return
            self.threads.saw_joined(queued.team, channel, thread)  # Slack's reads are paced
        self._unavailable(client, queued, error, delivery)

    async def on_message_event(self, read: SlackDelivery, workspace: Workspace) -> None:
        """A mention, or a message the bot hears (a DM, a channel, a thread): the hot path.
        ``bots.slack.ingress`` calls it straight over HTTP (the delivery verified and read
        once, the workspace authorized as bolt would); bolt's listeners in Socket Mode."""
        if read.event is not None and read.event.type == "app_mention":
            await self._mention(read, workspace)
        else:
            await self._message(read, workspace)

    async def _on_mention(self, context: AsyncBoltContext) -> None:
        await self._mention(_read(context), Workspace.of(context))

    async def _on_message(self, context: AsyncBoltContext) -> None:
        await self._message(_read(context), Workspace.of(context))

    async def _mention(self, read: SlackDelivery, workspace: Workspace) -> None:
        self._count("app_mention")
        callback, event = _message(read)
        if event.user is None or event.user == workspace.bot_user_id:
            log.info("slack: a mention without a person (an integration's) was ignored")
            return
        meta = event_context(callback, event).metadata
        in_thread = mention_in_thread(event)
        queued = SlackAsked(
            context=meta,
            text=message_text(event, workspace.bot_user_id),
            bot_user_id=workspace.bot_user_id,
            enterprise_install=workspace.enterprise_install,
            message_ts=in_thread,
            files=shared_files(event),
        )
        joins = self.threads.flag(queued.team, meta["channel_id"], meta["thread_id"])
        if in_thread is not None:
            # the mention that joins a human thread reads it first: that turn records this
            joins.first_payload = queued.question(history_before_ts=in_thread).payload()
        key = delivery_key(callback, event)
        await self._accept(workspace.client, queued, key, joins=joins)

    async def _message(self, read: SlackDelivery, workspace: Workspace) -> None:
        bot = workspace.bot_user_id
        if read.event is None or not is_from_person(read.event, bot):
            note = app_message_in_thread(read.body, bot, workspace.bot_id)
            if note is not None:
                self.turns.background(self._keep(workspace_of(read.body)[0], *note))
            return
        self._count("message")
        callback, event = _message(read)
        meta = event_context(callback, event).metadata
        queued = SlackAsked(
            context=meta,
            text=message_text(event, bot),
            bot_user_id=bot,
            enterprise_install=workspace.enterprise_install,
            files=shared_files(event),
        )
        key = delivery_key(callback, event)
        if not meta["is_dm"]:
            try:
                if not await self._is_follow_up(event, meta, bot):
                    return
            except StateUnavailableError as error:  # the Web API says if it is for us
                work = self._unavailable_if_in_thread(workspace.client, queued, error, key)
                self.turns.background(work)
                return
            queued.message_ts = event.ts  # told what the thread said before
        await self._accept(workspace.client, queued, key)

    async def _keep(
        self, team: str, channel: str, thread_ts: str, message: Mapping[str, Any]
    ) -> None:
        """Another app's message in a thread (after the ack): kept for the thread's next
        turn when the bot follows the thread (usually known in this process: no I/O)."""
        try:
            if await self.threads.contains(team, channel, thread_ts):
                await self.transcript.record(team, channel, thread_ts, [message])
        except StateUnavailableError as error:
            log.info("slack: an app's message in thread %s was not kept (%s)", thread_ts, error)

    async def _is_follow_up(
        self, event: MessageEvent, meta: Mapping[str, Any], bot: str | None
    ) -> bool:
        """A message in a thread the bot takes part in (a mention is answered as one).
        Raises ``StateUnavailableError`` when the shared cache cannot tell."""
        thread_ts = reply_thread(event, bot)
        if thread_ts is None:
            return False
        return await self.threads.contains(meta["workspace_id"], meta["channel_id"], thread_ts)

    async def _on_command(self, ack: Ack, context: AsyncBoltContext) -> None:
        self._count("command")
        command = _read(context).delivery
        assert isinstance(command, SlashCommand)
        private, question = command_question(command)
        private = private or not question
        # a public question: the worker opens the thread ("<@user> asked: ...")
        ctx = command_context(command, thread_ts=PRIVATE_THREAD if private else "")
        queued = SlackAsked(
            context=ctx.metadata,
            text=question,
            private=private,
            open_thread=not private,
            response_url=command.response_url,
            enterprise_install=bool(context.is_enterprise_install),
        )
        await self._accept_command(ack, queued, said=ON_IT if queued.private else None)

    async def _on_schedule_command(self, ack: Ack, context: AsyncBoltContext) -> None:
        """``/schedule ...``: a private turn the worker answers without the model
        (``bots.slack.schedules``); the schedule's place is the channel."""
        self._count("command")
        command = _read(context).delivery
        assert isinstance(command, SlashCommand)
        ctx = command_context(command, thread_ts=PRIVATE_THREAD)
        queued = SlackAsked(
            context=ctx.metadata,
            text=f"{SCHEDULE_COMMAND} {command.text or ''}".strip(),
            private=True,
            response_url=command.response_url,
            enterprise_install=bool(context.is_enterprise_install),
        )
        await self._accept_command(ack, queued)

    async def _on_decision_command(self, ack: Ack, context: AsyncBoltContext) -> None:
        """``/approve <id>`` / ``/deny <id>``: decided for the signed typist as the Home's
        buttons are (``bots.slack.home``), answered to them alone."""
        self._count("command")
        command = _read(context).delivery
        assert isinstance(command, SlashCommand)
        typed = f"{command.command} {command.text or ''}".strip()
        said = await self.home.typed(command_context(command, thread_ts=PRIVATE_THREAD), typed)
        await ack(response_type="ephemeral", text=said)

    async def _accept_command(
        self, ack: Ack, queued: SlackAsked, *, said: str | None = None
    ) -> None:
        """Queue a command's turn, then acknowledge it (``said``: a line the asker alone
        sees). A state that is down queues nothing and says so in the acknowledgement."""
        try:
            await self._record(queued)
        except StateUnavailableError as error:
            log.warning("slack: could not accept a command from %s: %s", queued.owner, error)
            self.metrics.unavailable.inc()
            await ack(response_type="ephemeral", text=f":warning: {UNAVAILABLE}")
            return
        if said:
            await ack(response_type="ephemeral", text=said)
        else:
            await ack()

    # --- clicks ---------------------------------------------------------------------------------

    async def _on_feedback(self, ack: Ack, context: AsyncBoltContext) -> None:
        await ack()
        self.metrics.events.labels(kind="feedback").inc()
        click = _click(context)
        feedback = feedback_of(click)
        if feedback is not None:
            await self.agent.record_feedback(action_context(click), feedback)

    async def _on_stop(self, ack: Ack, context: AsyncBoltContext) -> None:
        """The Stop button carries the turn id; the worker running it honours the asker's
        click only (the turn's owner), on whichever process that is."""
        await ack()
        self.metrics.events.labels(kind="stop").inc()
        click = _click(context)
        turn_id = stop_request_of(click)
        if turn_id is None:
            return
        by = asker_id(action_context(click).metadata)
        try:
            await self.turns.request_stop(turn_id, by=by)
        except StateUnavailableError as error:
            log.warning("slack: stop request of %s not delivered (%s)", by, error)

    async def _on_show_query(self, ack: Ack, context: AsyncBoltContext) -> None:
        """ "Show query": the clicker is resolved now, from the signed click; only one who may
        see tool arguments gets the SQL (privately), read from where the click happened."""
        await ack()
        self.metrics.events.labels(kind="show_query").inc()
        click = _click(context)
        turn_id = show_query_of(click)
        if turn_id is None:
            return
        clicked = action_context(click)
        meta = clicked.metadata
        messages = [SlackMessage(text=NOT_ALLOWED)]
        try:
            if await self.agent.may_see(clicked, UiFeature.TOOL_ARGUMENTS.value):
                sources = await self.queries.load(
                    meta["workspace_id"], meta["channel_id"], meta["thread_id"], turn_id
                )
                messages = query_messages(sources) if sources else [SlackMessage(text=GONE)]
        except StateUnavailableError as error:
            log.warning("slack: queries of turn %s not shown (%s)", turn_id, error)
            messages = [SlackMessage(text=f":warning: {UNAVAILABLE}")]
        await show_privately(
            context.client,
            channel=meta["channel_id"],
            user=meta["user_id"],
            thread_ts=meta["thread_id"] or None,
            messages=messages,
        )

    async def _on_approval(self, ack: Ack, context: AsyncBoltContext) -> None:
        """Approve / Deny / Stop on an approval message: decided by the agent (who may
        decide is checked now, for the clicker of the signed click, in the conversation
        clicked); then the message shows the decision in place and the turn resumes. A
        refusal ("only Ana may approve this", "already approved by Bo") is told to the
        clicker alone."""
        await ack()
        self.metrics.events.labels(kind="approval").inc()
        click = _click(context)
        approval = approval_click_of(click)
        if approval is None:
            return
        clicked = action_context(click)
        hints = {"response_url": click.response_url} if click.response_url else {}
        try:
            answer = await self.approvals.click(
                clicked, approval, conversation_id=conversation_id(clicked), hints=hints
            )
        except StateUnavailableError as error:
            log.warning(
                "slack: approval click of %s not recorded (%s)", asker_id(clicked.metadata), error
            )
            await self._tell_clicker(context.client, click, f":warning: {UNAVAILABLE}")
            return
        record = answer.record
        if answer.decided and record is not None and record.message is None:
            await self._show_on_click(click, record.component())  # not noted: ephemeral
        if not answer.decided:
            await self._tell_clicker(context.client, click, escape(answer.message))

    async def _show_on_click(self, click: BlockActions, view: ApprovalComponent) -> None:
        """An approval shown privately (no message to update): replaced through the click."""
        if not click.response_url:
            return
        [message] = approval_message(view)
        await AsyncWebhookClient(click.response_url).send(
            text=message.text, blocks=message.blocks, replace_original=True
        )

    async def _tell_clicker(self, client: AsyncWebClient, click: BlockActions, text: str) -> None:
        """``text`` to the clicker alone, where they clicked."""
        meta = action_context(click).metadata
        thread = meta["thread_id"]
        await show_privately(
            client,
            channel=meta["channel_id"],
            user=meta["user_id"],
            thread_ts=None if thread in ("", PRIVATE_THREAD) else thread,
            messages=[SlackMessage(text=text)],
        )

    async def _on_button(self, ack: Ack, context: AsyncBoltContext) -> None:
        self.metrics.events.labels(kind="button").inc()
        click = _click(context)
        message = button_message_of(click)
        if is_home_click(click):  # a command answered on the Home tab, or a question
            await ack()
            asked = await self.home.clicked(context.client, click)
            if asked is not None and asked.metadata["channel_id"]:
                meta_home: Any = {**asked.metadata, "thread_id": ""}
                question = SlackAsked(context=meta_home, text=message or "", open_thread=True)
                await self._accept(context.client, question)
            return
        meta = action_context(click).metadata
        queued = SlackAsked(
            context=meta,
            text=message or "",
            private=meta.get("thread_id") == PRIVATE_THREAD,
            response_url=click.response_url,
            enterprise_install=bool(context.is_enterprise_install),
        )
        joins = None
        if not queued.private:
            joins = self.threads.flag(queued.team, meta["channel_id"], meta["thread_id"])
        await self._accept(context.client, queued, joins=joins)
        await ack()

    async def _on_message_shortcut(
        self, ack: Ack, body: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        """ "Ask Threadline about this" (``bots.slack.message_action``): a turn as the
        asker in the message's thread, recorded before the ack."""
        self._count("message_action")
        action = read_message_action(body)
        queued = asked_about(
            action,
            enterprise_install=bool(context.is_enterprise_install),
            bot_user_id=context.bot_user_id,
        )
        meta = queued.context
        joins = self.threads.flag(queued.team, meta["channel_id"], meta["thread_id"])
        if queued.message_ts is not None:  # joining a thread: read it first, as a mention
            joins.first_payload = queued.question(history_before_ts=queued.message_ts).payload()
        await self._accept(context.client, queued, shortcut_key(action), joins=joins)
        await ack()

    async def _on_function(self, body: dict[str, Any], context: AsyncBoltContext) -> None:
        """The Workflow Builder step "Ask Threadline" (``bots.slack.workflow``)."""
        await self.steps.on_function(body, context, self.turns.accept)

    async def _on_sign_in_button(self, ack: Ack, context: AsyncBoltContext) -> None:
        """The button opened the sign-in page in the browser; Slack only wants the ack."""
        self.metrics.events.labels(kind="sign_in").inc()
        await ack()

    async def ask_again(self, signed: SignedIn) -> None:
        """Someone connected an MCP server (``/oauth/mcp/callback``): the question that waited
        for it is a new turn in its thread, asked as them (the metadata is the signed
        request's, kept sealed with the sign-in, and must be the signer's own)."""
        waiting = signed.waiting
        if waiting is None:
            return
        meta = _signed_metadata(waiting.request)
        if (
            meta is None
            or user_key(meta["workspace_id"], meta["user_id"], meta.get("slack_enterprise_id"))
            != signed.person
        ):
            log.warning("slack: a sign-in's waiting question is not its signer's; not asked")
            return
        private = meta.get("thread_id") == PRIVATE_THREAD
        queued = SlackAsked(context=meta, text=waiting.question, private=private)
        joins = (
            None
            if private
            else self.threads.flag(queued.team, meta["channel_id"], meta["thread_id"])
        )
        await self._accept(self.client, queued, joins=joins)

    # --- other events: the agent view, the Messages tab, identity -------------------------------

    async def _first_event(self, body: Mapping[str, Any]) -> bool:
        """False for a redelivered event (same ``event_id``); True when unsure (outage)."""
        kind = str((body.get("event") or {}).get("type"))
        self.metrics.events.labels(kind=kind).inc()
        event_id = body.get("event_id")
        if not event_id:
            return True
        try:
            return await self.runtime.first_delivery(f"slack:event:{event_id}")
        except StateUnavailableError as error:
            log.warning("slack: event %s not deduplicated (%s)", event_id, error)
            return True

    async def _on_assistant_thread_started(
        self, body: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        if not await self._first_event(body):
            return
        read = _read(context)
        assert isinstance(read.delivery, EventCallback)
        assert isinstance(read.event, AssistantThreadEvent)
        ctx = assistant_thread_context(read.delivery, read.event)
        starter = [component async for component in self.agent.send_message(ctx, "")]
        await suggest_prompts(context.client, ctx, starter)

    async def _on_home_opened(self, context: AsyncBoltContext) -> None:
        """The Home tab: the person's home, published (``bots.slack.home``). First visit to
        the Messages tab: post the agent's welcome (starter UI) once."""
        read = _read(context)
        assert isinstance(read.delivery, EventCallback) and isinstance(read.event, HomeEvent)
        if read.event.tab == "home":
            team, enterprise = workspace_of(read.body)
            channel = read.event.channel or ""
            await self.home.opened(context.client, team, read.event.user, channel, enterprise)
            return
        ctx = home_context(read.delivery, read.event)
        if ctx is None:
            return
        meta = ctx.metadata
        try:
            welcome = f"slack:welcome:{meta['workspace_id']}:{meta['user_id']}"
            if not await self.state.cache.add(welcome, ttl=WELCOME_TTL):
                return
        except StateUnavailableError as error:  # better no welcome than a repeated one
            log.warning("slack: welcome of %s skipped (%s)", meta["user_id"], error)
            return
        async for component in self.agent.send_message(ctx, ""):
            await post_welcome(context.client, ctx, component)

    async def _on_identity_event(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        self.metrics.events.labels(kind=str(event.get("type"))).inc()
        resolver = self.agent.user_resolver
        if isinstance(resolver, SlackUserResolver):
            team, _ = workspace_of(body)
            try:
                await resolver.handle_event(team, event)
            except StateUnavailableError as error:  # the entry expires with its TTL anyway
                log.warning("slack: identity cache not invalidated (%s)", error)

    async def _answer_privately(self, client: AsyncWebClient, metadata: Mapping[str, Any]) -> bool:
        """Whether a place (a schedule's) is now read by another organisation and the
        policy does not allow answering there."""
        shared = await self.places.is_shared(
            client,
            str(metadata.get("workspace_id") or ""),
            str(metadata.get("channel_id") or ""),
            is_dm=bool(metadata.get("is_dm")),
        )
        return shared and self.runtime.place_policy.for_place(metadata) != "allow"

    async def _on_place_event(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        """``channel_shared`` / ``channel_unshared``: the next answer there knows it."""
        self._count(str(event.get("type")))
        team, _ = workspace_of(body)
        try:
            await self.places.handle_event(team, event)
        except StateUnavailableError as error:  # read again from conversations.info later
            log.warning("slack: channel sharing not recorded (%s)", error)

    async def _ignore(self) -> None:
        return None

    async def _read_once(
        self, body: dict[str, Any], context: AsyncBoltContext, next: Callable[[], Awaitable[None]]
    ) -> BoltResponse | None:
        """Every delivery is read once, before its listener: over HTTP the ingress read it
        (``bots.slack.ingress``); a Socket Mode delivery is read here. A malformed one is
        acknowledged and dropped (Slack would only retry it)."""
        if DELIVERY not in context:
            try:
                context[DELIVERY] = read_delivery(body)
            except MalformedPayload as problem:
                log.warning("slack: dropped a malformed delivery (%s)", str(problem)[:200])
                self.metrics.dropped.labels(reason="malformed").inc()
                return BoltResponse(status=200, body="")
        await next()
        return None

    async def _on_error(self, error: Exception, body: dict[str, Any]) -> BoltResponse:
        """A listener failed: say so once (its kind and the problem, never the payload) and
        acknowledge the delivery, since Slack would only retry it."""
        kind = body.get("type") if isinstance(body, dict) else None
        if isinstance(error, MalformedPayload):
            log.warning("slack: dropped a malformed %s (%s)", kind, str(error)[:200])
            self.metrics.dropped.labels(reason="malformed").inc()
        else:
            log_failure(log, error, f"slack: the listener of a {kind}")
            self.metrics.dropped.labels(reason="failed").inc()
        return BoltResponse(status=200, body="")


_SIGNED_KEYS = frozenset(
    key
    for key in ChannelMetadata.__annotations__
    if not key.startswith(("teams_", "console_"))
    and key not in ("turn_id", "scheduled_by", "profile")
)
"""What a Slack request kept from its signed payload (the keys every channel fills and
Slack's own)."""


def _signed_metadata(request: Mapping[str, Any]) -> ChannelMetadata | None:
    """A kept request's Slack metadata (without the turn it was: a new turn gets its own),
    or ``None`` when it is not a Slack request of a person in a place."""
    if request.get("platform") != "slack":
        return None
    keys = ("workspace_id", "user_id", "channel_id", "thread_id")
    if not all(isinstance(request.get(key), str) and request.get(key) for key in keys):
        return None
    return read_metadata({k: v for k, v in request.items() if k in _SIGNED_KEYS})


def _read(context: AsyncBoltContext) -> SlackDelivery:
    read = context.get(DELIVERY)
    assert isinstance(read, SlackDelivery), "read_delivery runs before every listener"
    return read


def _message(read: SlackDelivery) -> tuple[EventCallback, MessageEvent]:
    """The callback and message event of a mention or a person's message (``read_delivery``
    read those in full)."""
    if not isinstance(read.delivery, EventCallback) or not isinstance(read.event, MessageEvent):
        raise MalformedPayload("event: not a message")
    return read.delivery, read.event


def _click(context: AsyncBoltContext) -> BlockActions:
    click = _read(context).delivery
    if not isinstance(click, BlockActions):
        raise MalformedPayload("block_actions: not a button click")
    return click
