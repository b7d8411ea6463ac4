"""The console's aiohttp app: the page, its JSON API and the channel fakes the adapters use.

    GET  /                      the page (index.html; /static/ serves app.js, app.css, ...)
    GET  /vendor/adaptivecards.js  Microsoft's Adaptive Cards renderer (shipped: vendor/)
    GET  /api/info              model, personas, pace, the message limit
    POST /api/files?name=&user_id=  a file's bytes -> {"id", "name", "size"} (attach it)
    POST /api/turns             {"text", "thread_id", "persona", "files"} -> text/event-stream
    POST /api/turns/{id}/stop   cancel a running turn
    GET  /api/schedules         the schedules made in the console
    POST /api/schedules/{id}/fire  run a schedule's next occurrence now -> text/event-stream
    POST /api/feedback          {"message_id", "positive", "thread_id", "persona"}
    POST /api/queries           {"turn_id", "thread_id", "persona"}: Slack's "Show query"
    POST /api/approvals         {"approval_id", "decision", "channel", "thread_id", "persona"}:
                                a click on an approval message -> text/event-stream (the
                                decision shown, then the resumed turn; ``bots.dev.approvals``)
    POST /api/home              {"persona", "timezone"}: the home as Slack's Home tab view
                                and Teams' /home card (``bots.dev.entry``)
    POST /api/home/click        {"persona", "command", "timezone"}: a home button
    POST /api/workflow-step     {"persona", "question"}: the step "Ask Threadline" run ->
                                the completeSuccess / completeError Slack would get
    POST /api/message-action    {"persona", "thread_id", "message", "author", "question"}:
                                "Ask Threadline about this" -> text/event-stream
    /slack/                     the fake Slack Web API the Slack adapter talks to (``slack_view``)
    /teams/                     the fake Bot Connector the Teams adapter talks to (``teams_view``)

Requests from other origins are refused, whatever their method (WebSocket upgrades too: the
page is the only client besides the adapter), and so are Host headers other than the
loopback names (DNS rebinding). A refused request
answers ``{"error": "<what is wrong>"}``, which the page shows as it is, and is logged.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from aiohttp import web
from pydantic import BaseModel, Field, ValidationError

from adapters.approval import Decision
from adapters.files import plain_name, too_big
from agent_core.database.file_formats import SUFFIXES
from agent_core.mcp.hub import SignedIn
from bots.agents import ServedAgent
from bots.dev.entry import ConsoleEntry
from bots.dev.events import sse
from bots.dev.identity import Persona
from bots.dev.sign_in import sign_in_page
from bots.dev.turns import Console, ConsoleOptions, Turn
from bots.files import MAX_FILES, SharedFiles
from bots.mcp import add_callback, close_mcp

log = logging.getLogger("threadline.dev")

HERE = Path(__file__).parent
STATIC = HERE  # the page's files sit beside this module, so package-data ships them
ADAPTIVE_CARDS_JS = HERE / "vendor" / "adaptivecards" / "adaptivecards.min.js"
MAX_MESSAGE = 40_000
"""Characters one message may have: Slack's limit for a message's text."""
CONSOLE_KEY = web.AppKey("console", Console)
ENTRY_KEY = web.AppKey("entry", ConsoleEntry)
WARMUP_KEY = web.AppKey("warmup", asyncio.Task)
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]"}
STATIC_TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}
SAFE_ID = r"^[A-Za-z0-9_.-]{1,64}$"

PERSONAS = [
    {"label": "Ana (user)", "user_id": "U0ANA", "name": "Ana", "groups": ["user"]},
    {"label": "Alex (admin)", "user_id": "U0ALEX", "name": "Alex", "groups": ["user", "admin"]},
    {"label": "Xe (another organisation)", "user_id": "U0XE", "name": "Xe", "groups": ["external"]},
]
"""The identity switcher's presets; Xe is a person of another organisation (``external``:
granted nothing unless ``external_groups`` says so; see the README)."""

Model = TypeVar("Model", bound=BaseModel)


class TurnRequest(BaseModel):
    text: str = Field(default="", max_length=MAX_MESSAGE)
    thread_id: str = Field(pattern=SAFE_ID)
    persona: Persona = Field(default_factory=Persona)
    files: list[Annotated[str, Field(pattern=SAFE_ID)]] = Field(
        default_factory=list, max_length=MAX_FILES
    )
    """The attached files' upload ids (``POST /api/files``)."""
    timezone: str | None = Field(default=None, max_length=64)
    """The browser's time zone (``Intl``'s IANA name): the asker's, for schedules."""


class FeedbackRequest(BaseModel):
    message_id: str = Field(min_length=1, max_length=100)
    positive: bool
    thread_id: str = Field(pattern=SAFE_ID)
    persona: Persona = Field(default_factory=Persona)
    channel: str = Field(default="slack", pattern="^(slack|teams)$")
    turn_id: str | None = Field(default=None, pattern=SAFE_ID)


def refusal(status: type[web.HTTPException], message: str) -> web.HTTPException:
    """An HTTP error whose JSON body says what is wrong, in words the page shows as they are."""
    return status(text=json.dumps({"error": message}), content_type="application/json")


def _problem(error: ValidationError) -> str:
    """The first problem of a request body, said plainly."""
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "body"
    if first["type"] == "string_too_long" and field == "text":
        length = len(first["input"]) if isinstance(first["input"], str) else 0
        return (
            f"the message is {length:,} characters long; the console takes at most "
            f"{MAX_MESSAGE:,} (as Slack does)"
        )
    return f"{field}: {first['msg']}"


async def _body(request: web.Request, model: type[Model]) -> Model:
    try:
        data = await request.json()
    except ValueError:
        raise refusal(web.HTTPBadRequest, "the request body is not JSON") from None
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise refusal(web.HTTPBadRequest, _problem(error)) from None


def _own_url(request: web.Request) -> str:
    """The address the console itself listens on (where the adapters reach the fakes)."""
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    host, port = (sockname[0], sockname[1]) if sockname else ("127.0.0.1", 80)
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}"


@web.middleware
async def same_origin_only(request: web.Request, handler: Any) -> web.StreamResponse:
    hostname = request.host.rsplit(":", 1)[0] if not request.host.endswith("]") else request.host
    if hostname not in LOOPBACK_HOSTS:
        raise refusal(web.HTTPForbidden, "the console only answers on 127.0.0.1")
    origin = request.headers.get("Origin")
    # every method, WebSocket upgrades (GET) too: a page elsewhere gets nothing here
    if origin and origin.split("://", 1)[-1] != request.host:
        raise refusal(web.HTTPForbidden, "cross-origin requests are refused")
    response: web.StreamResponse = await handler(request)
    return response


@web.middleware
async def log_refusals(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every refused request of the page's API is logged with its reason (the channel fakes
    log their own)."""
    try:
        response: web.StreamResponse = await handler(request)
    except web.HTTPException as error:
        if error.status >= 400 and not request.path.startswith(("/slack/", "/teams/")):
            log.warning(
                "%s %s refused (%d): %s", request.method, request.path, error.status, _reason(error)
            )
        raise
    return response


def _reason(error: web.HTTPException) -> str:
    try:
        return str(json.loads(error.text or "")["error"])
    except (ValueError, KeyError, TypeError):
        return error.text or error.reason


async def index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})


async def static_file(request: web.Request) -> web.FileResponse:
    name = request.match_info["name"]
    path = (STATIC / name).resolve()
    if path.parent != STATIC.resolve() or path.suffix not in STATIC_TYPES or not path.is_file():
        raise web.HTTPNotFound()
    headers = {"Cache-Control": "no-cache", "Content-Type": STATIC_TYPES.get(path.suffix, "")}
    return web.FileResponse(path, headers={k: v for k, v in headers.items() if v})


async def adaptive_cards(request: web.Request) -> web.StreamResponse:
    """Microsoft's renderer, shipped with the package (``vendor/adaptivecards``)."""
    headers = {"Content-Type": "text/javascript", "Cache-Control": "max-age=86400"}
    return web.FileResponse(ADAPTIVE_CARDS_JS, headers=headers)


async def info(request: web.Request) -> web.Response:
    console = request.app[CONSOLE_KEY]
    model = console.agent.llm_service.model_name
    return web.json_response(
        {
            "model": model,
            "scripted": "scripted" in model,
            "personas": PERSONAS,
            "max_message": MAX_MESSAGE,
            "pace": console.options.pace,
            "teams_targeted": console.options.teams_targeted,
            "files": {
                "max_bytes": console.max_file_bytes,
                "readable": console.files is not None,
                "accept": ",".join(SUFFIXES),
            },
        }
    )


class UploadQuery(BaseModel):
    name: str = Field(min_length=1, max_length=255)
    user_id: str = Field(pattern=SAFE_ID)


UPLOAD_CHUNK = 64 * 1024


def _too_large(name: str, limit: int, size: int) -> web.HTTPException:
    """413 in the bots' words for a file over the limit."""
    return web.HTTPRequestEntityTooLarge(
        max_size=limit,
        actual_size=size,
        text=json.dumps({"error": too_big(name, limit)}),
        content_type="application/json",
    )


async def post_file(request: web.Request) -> web.Response:
    """Attach a file: its bytes are the body; its name and who attaches it (its owner, as
    a signed Slack event names the sharer) the query. A body over the files' size limit is
    refused unread past the limit (413, in the bots' words); what the bytes hold is judged
    when the question is answered (``bots.files``), as in the bots."""
    try:
        query = UploadQuery.model_validate(dict(request.query))
    except ValidationError as error:
        raise refusal(web.HTTPBadRequest, _problem(error)) from None
    console = request.app[CONSOLE_KEY]
    name, limit = plain_name(query.name), console.max_file_bytes
    if (request.content_length or 0) > limit:
        raise _too_large(name, limit, request.content_length or 0)
    content = bytearray()
    async for chunk in request.content.iter_chunked(UPLOAD_CHUNK):
        content += chunk
        if len(content) > limit:
            raise _too_large(name, limit, len(content))
    upload = console.uploads.add(name, bytes(content), owner=query.user_id)
    return web.json_response({"id": upload.id, "name": upload.name, "size": upload.size})


async def post_turn(request: web.Request) -> web.StreamResponse:
    body = await _body(request, TurnRequest)
    console = request.app[CONSOLE_KEY]
    if console.uploads.missing(body.files):
        raise refusal(
            web.HTTPBadRequest,
            "an attached file is no longer uploaded (each is "
            "read once, with its question); attach it again",
        )
    turn = console.start_turn(
        body.persona,
        body.thread_id,
        body.text,
        _own_url(request),
        files=body.files,
        timezone=body.timezone,
    )
    return await _stream(request, turn)


async def _stream(request: web.Request, turn: Turn) -> web.StreamResponse:
    """A turn's events, as Server-Sent Events, until it ends."""
    response = web.StreamResponse(
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-cache",
            "X-Turn-Id": turn.id,
        }
    )
    await response.prepare(request)
    try:
        async for event, data in turn.feed:
            await response.write(sse(event, data))
    except ConnectionResetError:
        turn.stop()  # the page went away: no one is reading the answer (not an error)
    except asyncio.CancelledError:
        turn.stop()
        raise
    return response


class ApprovalRequest(BaseModel):
    approval_id: str = Field(pattern=SAFE_ID)
    decision: Decision
    channel: Literal["slack", "teams"] = "slack"
    thread_id: str = Field(pattern=SAFE_ID)
    persona: Persona = Field(default_factory=Persona)


async def post_approval(request: web.Request) -> web.StreamResponse:
    """A click on an approval message, as the persona selected: answered like a turn."""
    body = await _body(request, ApprovalRequest)
    turn = request.app[CONSOLE_KEY].click_approval(
        body.persona,
        body.thread_id,
        body.approval_id,
        body.decision,
        body.channel,
        _own_url(request),
    )
    return await _stream(request, turn)


async def list_schedules(request: web.Request) -> web.Response:
    """The console's schedules (``bots.dev.schedules``)."""
    return web.json_response({"schedules": await request.app[CONSOLE_KEY].schedules.listing()})


async def fire_schedule(request: web.Request) -> web.StreamResponse:
    """Run a schedule's next occurrence now, streamed like an answer."""
    schedule_id = request.match_info["schedule_id"]
    turn = await request.app[CONSOLE_KEY].schedules.fire(schedule_id, _own_url(request))
    if turn is None:
        raise refusal(
            web.HTTPNotFound, f"no active schedule {schedule_id} (paused, or not confirmed?)"
        )
    assert isinstance(turn, Turn)
    return await _stream(request, turn)


async def stop_turn(request: web.Request) -> web.Response:
    turn = request.app[CONSOLE_KEY].turns.get(request.match_info["turn_id"])
    if turn is None:
        raise refusal(web.HTTPNotFound, "no such turn (it ended long ago?)")
    return web.json_response({"stopping": turn.stop(), "state": turn.state})


async def post_feedback(request: web.Request) -> web.Response:
    body = await _body(request, FeedbackRequest)
    feedback = await request.app[CONSOLE_KEY].record_feedback(
        body.persona, body.thread_id, body.message_id, body.positive, turn_id=body.turn_id
    )
    return web.json_response({"recorded": feedback.model_dump(mode="json")})


class QueriesRequest(BaseModel):
    turn_id: str = Field(pattern=SAFE_ID)
    thread_id: str = Field(pattern=SAFE_ID)
    persona: Persona = Field(default_factory=Persona)


async def post_queries(request: web.Request) -> web.Response:
    """Slack's "Show query": the messages the clicker alone sees (checked at the click)."""
    body = await _body(request, QueriesRequest)
    messages = await request.app[CONSOLE_KEY].show_queries(
        body.persona, body.thread_id, body.turn_id
    )
    return web.json_response({"messages": [{"text": m.text, "blocks": m.blocks} for m in messages]})


class HomeRequest(BaseModel):
    persona: Persona = Field(default_factory=Persona)
    timezone: str = Field(default="UTC", max_length=64)
    command: str = Field(default="", max_length=MAX_MESSAGE)


async def post_home(request: web.Request) -> web.Response:
    """The persona's home, as each channel shows it."""
    body = await _body(request, HomeRequest)
    entry = request.app[ENTRY_KEY]
    return web.json_response(await entry.home_payloads(body.persona, body.timezone))


async def post_home_click(request: web.Request) -> web.Response:
    """A home button, as the persona: answered like the bots answer it."""
    body = await _body(request, HomeRequest)
    if not body.command.strip():
        raise refusal(web.HTTPBadRequest, "command: a home button sends a command")
    entry = request.app[ENTRY_KEY]
    return web.json_response(await entry.click(body.persona, body.command, body.timezone))


class StepRequest(BaseModel):
    persona: Persona = Field(default_factory=Persona)
    question: str = Field(min_length=1, max_length=MAX_MESSAGE)


async def post_workflow_step(request: web.Request) -> web.Response:
    """The Workflow Builder step run as the persona: what Slack would be told."""
    body = await _body(request, StepRequest)
    if not body.question.strip():
        raise refusal(web.HTTPBadRequest, "question: the step needs a question")
    entry = request.app[ENTRY_KEY]
    return web.json_response(await entry.workflow_step(body.persona, body.question.strip()))


class MessageActionRequest(BaseModel):
    persona: Persona = Field(default_factory=Persona)
    thread_id: str = Field(pattern=SAFE_ID)
    message: str = Field(min_length=1, max_length=MAX_MESSAGE)
    author: str = Field(default="someone", max_length=64)
    question: str | None = Field(default=None, max_length=2000)


async def post_message_action(request: web.Request) -> web.StreamResponse:
    """ "Ask Threadline about this" on a message, as the persona, answered in its thread."""
    body = await _body(request, MessageActionRequest)
    text = ConsoleEntry.question(body.message, body.author, body.question)
    turn = request.app[CONSOLE_KEY].start_turn(
        body.persona, body.thread_id, text, _own_url(request)
    )
    return await _stream(request, turn)


def _warm_up_charts() -> None:
    """Import and exercise matplotlib once (when installed), so the first chart is quick."""
    from agent_core.components import ChartComponent, ChartSeries
    from agent_core.tools.chart_render import png_available, render_chart_png

    if not png_available():
        return
    # Small on purpose: it holds the renderer's lock, and a question may already be waiting.
    chart = ChartComponent(chart_type="bar", x=["a"], series=[ChartSeries(name="n", values=[1])])
    render_chart_png(chart, width=1, height=1, dpi=10)


async def _on_startup(app: web.Application) -> None:
    await app[CONSOLE_KEY].open()
    app[WARMUP_KEY] = asyncio.create_task(asyncio.to_thread(_warm_up_charts))


async def _on_cleanup(app: web.Application) -> None:
    await app[CONSOLE_KEY].close()
    await close_mcp(app[CONSOLE_KEY].agent)  # the MCP servers' sessions: stdio servers stopped
    warmup = app.get(WARMUP_KEY)
    if warmup is not None:
        await asyncio.gather(warmup, return_exceptions=True)


async def _asked_by_the_page(signed: SignedIn) -> None:
    """In the console the page asks the waiting question again (``bots.dev.sign_in``)."""


def create_app(
    agent: ServedAgent,
    *,
    options: ConsoleOptions | None = None,
    files: SharedFiles | None = None,
) -> web.Application:
    """The console app for ``agent`` (normally the demo agent, see ``server.build_agent``);
    attached files become tables in ``files`` (``bots.files.shared_files_store``)."""
    app = web.Application(
        middlewares=[log_refusals, same_origin_only], client_max_size=16 * 1024 * 1024
    )
    console = Console(agent, options=options, files=files)
    app[CONSOLE_KEY] = console
    app[ENTRY_KEY] = ConsoleEntry(agent, console.schedules.schedules)
    app.router.add_get("/", index)
    app.router.add_get("/static/{name}", static_file)
    app.router.add_get("/vendor/adaptivecards.js", adaptive_cards)
    app.router.add_get("/api/info", info)
    app.router.add_post("/api/files", post_file)
    app.router.add_post("/api/turns", post_turn)
    app.router.add_post("/api/turns/{turn_id}/stop", stop_turn)
    app.router.add_get("/api/schedules", list_schedules)
    app.router.add_post(r"/api/schedules/{schedule_id:[0-9a-f]{8}}/fire", fire_schedule)
    app.router.add_post("/api/feedback", post_feedback)
    app.router.add_post("/api/queries", post_queries)
    app.router.add_post("/api/approvals", post_approval)
    app.router.add_post("/api/home", post_home)
    app.router.add_post("/api/home/click", post_home_click)
    app.router.add_post("/api/workflow-step", post_workflow_step)
    app.router.add_post("/api/message-action", post_message_action)
    console.slack.mount(app)
    console.teams.mount(app)
    add_callback(app, agent, _asked_by_the_page, page=sign_in_page)  # MCP sign-ins, locally
    app.on_startup.append(_on_startup)
    app.on_cleanup.append(_on_cleanup)
    return app
