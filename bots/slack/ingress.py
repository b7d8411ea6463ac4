"""The boundary of ``POST /slack/events``: whatever the bytes, an answer below 500.

    headers: a timestamp of ASCII digits, a ``v0=`` signature      else 401
    the signature: HMAC-SHA256 of the raw bytes, within 5 minutes  else 401
    ---------------------------------------------------------------- verified from here on
    the body: UTF-8; JSON or a form (``parse_body``), parsed once   else dropped
    its shape (``adapters.slack.payloads.read_delivery``), read once  else dropped
    a mention or a message: the bot's own handler                  a failure: dropped
    anything else: bolt's dispatch (listeners), given that reading  a failure: dropped

Nothing before the signature check has a side effect. The request is verified here only:
bolt does not check the signature again, and it is handed the parsed body and the
``SlackDelivery`` the listeners read (``bots.slack.bot``), so nothing is parsed twice. The
deliveries that are most of the traffic, mentions and messages, go straight to the bot's
handler (``SlackBot.on_message_event``), with the workspace authorized as bolt would
(``WorkspaceClients.authorize``): their ack waits on the turn being recorded, and bolt's
per-request machinery would be most of that wait. A
*dropped* delivery is acknowledged (200, so Slack does not retry it) and logged once, at
warning level, with what was wrong (the field, never its value) and the delivery's kind: no
body, no header, no secret in the log, and no Web API call is made for it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from adapters.slack.context import workspace_of_delivery
from adapters.slack.payloads import EventCallback, MalformedPayload, SlackDelivery, read_delivery
from agent_core.clock import SYSTEM_CLOCK
from agent_core.errors import Unauthenticated, log_failure
from bots.slack.clients import DELIVERY

if TYPE_CHECKING:
    from aiohttp import web

    from bots.slack.bot import SlackBot


log = logging.getLogger(__name__)

MESSAGE_EVENTS = frozenset({"app_mention", "message"})
"""The events ``SlackBot.on_message_event`` handles (bolt routes every other)."""

MAX_SKEW = 5 * 60
"""Seconds a request's timestamp may be off (Slack's own rule: replays are refused)."""
MAX_REASON = 200


def signed(raw: bytes, timestamp: str, signature: str, secret: str, *, now: float) -> bool:
    """Whether ``signature`` is Slack's ``v0`` signature of ``raw`` at ``timestamp``.

    Any header that is not ASCII, or a timestamp that is not plain digits, is unsigned.

    >>> body, ts = b'{"type":"event_callback"}', "1700000000"
    >>> sig = "v0=" + hmac.new(b"s", b"v0:" + ts.encode() + b":" + body, "sha256").hexdigest()
    >>> signed(body, ts, sig, "s", now=1700000001), signed(body, "\\u0661\\u0667", sig, "s", now=0)
    (True, False)
    """
    if not (timestamp.isascii() and timestamp.isdigit() and signature.isascii()):
        return False
    if abs(now - int(timestamp)) > MAX_SKEW:
        return False
    base = b"v0:" + timestamp.encode() + b":" + raw
    expected = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), signature.encode())


def parse_body(raw: bytes, content_type: str | None) -> Any:
    """A verified body as Slack sends it: JSON (events), or a form whose ``payload`` field
    is JSON (interactions) or whose fields are the delivery (slash commands). Raises
    ``ValueError`` (or ``RecursionError``) for bytes that are none of these.

    >>> parse_body(b"command=%2Fask&text=hi&user_id=U1", "application/x-www-form-urlencoded")
    {'command': '/ask', 'text': 'hi', 'user_id': 'U1'}
    """
    text = raw.decode("utf-8")
    if content_type == "application/json" or text.startswith("{"):
        parsed = json.loads(text)
    else:
        fields = dict(parse_qsl(text, keep_blank_values=True))
        parsed = json.loads(fields["payload"]) if "payload" in fields else fields
    return parsed


async def receive(
    bot: SlackBot, raw: bytes, headers: Mapping[str, str], query: str = ""
) -> BoltResponse | None:
    """One request, transport-free (what ``/slack/events`` runs after reading the body):
    ``Unauthenticated`` when it is not signed with the app's signing secret; else parsed
    and read once and dispatched to the listeners: bolt's response, or None for a delivery
    that was dropped (acknowledged, logged once)."""
    named = {name.lower(): value for name, value in headers.items()}
    secret = bot.settings.signing_secret
    timestamp = named.get("x-slack-request-timestamp", "")
    signature = named.get("x-slack-signature", "")
    if secret is None or not signed(
        raw, timestamp, signature, secret.get_secret_value(), now=SYSTEM_CLOCK.now()
    ):
        raise Unauthenticated("not signed with the app's signing secret")
    try:
        body = parse_body(raw, named.get("content-type", "").partition(";")[0].strip())
        read = read_delivery(body)
    except MalformedPayload as problem:
        _dropped(bot, "malformed", str(problem))
        return None
    except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, nested too deep
        _dropped(bot, "unreadable", type(error).__name__)
        return None
    event = read.event
    if isinstance(read.delivery, EventCallback) and event and event.type in MESSAGE_EVENTS:
        await _message_event(bot, read, read.delivery)
        return BoltResponse(status=200, body="")
    try:
        request = AsyncBoltRequest(
            body=dict(body),
            query=query,
            headers=dict(headers),
            context={DELIVERY: read},
            # bolt's mode for a delivery verified and parsed before it: it reads the body as
            # given and does not check the signature again
            mode="socket_mode",
        )
    except (TypeError, AttributeError, KeyError) as error:  # bolt reads e.g. event.user
        _dropped(bot, "malformed", f"bolt cannot read it ({type(error).__name__})")
        return None
    try:
        response = await bot.app.async_dispatch(request)
    except Exception as error:
        log.exception("slack: dispatch failed")
        _dropped(bot, "failed", type(error).__name__)
        return None
    if response.status >= 500:
        _dropped(bot, "failed", f"bolt answered {response.status}")
        return None
    return response


async def handle_events(bot: SlackBot, request: web.Request) -> web.Response:
    """``POST /slack/events`` (see the module docstring)."""
    from aiohttp import web
    from slack_bolt.adapter.aiohttp import to_aiohttp_response

    started = time.perf_counter()
    try:
        raw = await request.read()
        headers = {name: request.headers.getone(name) for name in request.headers}
        response = await receive(bot, raw, headers, request.query_string)
    except Unauthenticated:
        bot.metrics.refused.labels(status="401").inc()
        return web.Response(status=401)
    finally:
        bot.metrics.ack_seconds.observe(time.perf_counter() - started)
    if response is None:
        return web.Response(status=200)
    return await to_aiohttp_response(response)


async def _message_event(bot: SlackBot, read: SlackDelivery, callback: EventCallback) -> None:
    """A mention or a message, to the bot's handler (see the module docstring)."""
    team, enterprise = workspace_of_delivery(callback, read.event)
    authorized = (callback.authorizations or [{}])[0]
    try:
        workspace = await bot.clients.authorize(
            team, enterprise, enterprise_install=bool(authorized.get("is_enterprise_install"))
        )
        await bot.on_message_event(read, workspace)
    except MalformedPayload as problem:
        _dropped(bot, "malformed", str(problem))
    except Exception as error:  # a workspace gone, a bug: acked all the same (said once)
        log_failure(log, error, "slack: a message event")
        bot.metrics.dropped.labels(reason="failed").inc()


def _dropped(bot: SlackBot, why: str, reason: str) -> None:
    """Acknowledge a verified delivery that cannot be served, and say so once."""
    bot.metrics.dropped.labels(reason=why).inc()
    log.warning("slack: dropped a signed delivery (%s: %s)", why, reason[:MAX_REASON])
