"""The boundary of ``POST /slack/events``: whatever the bytes, an answer below 500.

    headers: a timestamp of ASCII digits, a ``v0=`` signature      else 401
    the signature: HMAC-SHA256 of the raw bytes, within 5 minutes  else 401
    ---------------------------------------------------------------- verified from here on
    the body: UTF-8; JSON or a form, as bolt parses it              else dropped
    its shape (``adapters.slack.payloads.read_delivery``)           else dropped
    bolt's dispatch (listeners)                                     a failure: dropped

Nothing before the signature check has a side effect. A *dropped* delivery is acknowledged
(200, so Slack does not retry it) and logged once, at warning level, with what was wrong
(the field, never its value) and the delivery's kind: no body, no header, no secret in the
log, and no Web API call is made for it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from typing import TYPE_CHECKING

from slack_bolt.request.async_request import AsyncBoltRequest

from adapters.slack.payloads import MalformedPayload, read_delivery

if TYPE_CHECKING:
    from aiohttp import web

    from bots.slack.bot import SlackBot

log = logging.getLogger(__name__)

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


async def handle_events(bot: SlackBot, request: web.Request) -> web.Response:
    """``POST /slack/events`` (see the module docstring)."""
    from aiohttp import web
    from slack_bolt.adapter.aiohttp import to_aiohttp_response

    raw = await request.read()
    secret = bot.settings.signing_secret
    timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
    signature = request.headers.get("X-Slack-Signature", "")
    if secret is None or not signed(
        raw, timestamp, signature, secret.get_secret_value(), now=time.time()
    ):
        bot.metrics.refused.labels(status="401").inc()
        return web.Response(status=401)
    try:
        bolt_request = _bolt_request(request, raw)
        read_delivery(bolt_request.body)
    except MalformedPayload as problem:
        return _dropped(bot, "malformed", str(problem))
    except Exception as error:  # bolt could not read it (deep nesting, odd shapes...)
        return _dropped(bot, "unreadable", type(error).__name__)
    try:
        response = await bot.app.async_dispatch(bolt_request)
    except Exception as error:
        log.exception("slack: dispatch failed")
        return _dropped(bot, "failed", type(error).__name__)
    if response.status >= 500:
        return _dropped(bot, "failed", f"bolt answered {response.status}")
    return await to_aiohttp_response(response)


def _bolt_request(request: web.Request, raw: bytes) -> AsyncBoltRequest:
    """The request as bolt reads it; the body must be UTF-8 whatever ``charset`` claims."""
    return AsyncBoltRequest(
        body=raw.decode("utf-8"),
        query=request.query_string,
        headers={name: request.headers.getone(name) for name in request.headers},
    )


def _dropped(bot: SlackBot, why: str, reason: str) -> web.Response:
    """Acknowledge a verified delivery that cannot be served, and say so once."""
    from aiohttp import web

    bot.metrics.dropped.labels(reason=why).inc()
    log.warning("slack: dropped a signed delivery (%s: %s)", why, reason[:MAX_REASON])
    return web.Response(status=200)
