"""The boundary of ``POST /api/messages``: whatever the bytes, an answer below 500.

    Content-Type: application/json (any parameters; the body is read as UTF-8)  else 415
    the body: UTF-8 JSON, an object with a ``type``, an activity botbuilder reads  else 400
    the JWT (botbuilder's ``CloudAdapter``, ``bots.teams.botbuilder``)            else 401
    ------------------------------------------------------------- authenticated from here on
    its shape (``adapters.teams.payloads.read_activity``), the bot's handlers  a failure: dropped

Nothing before authentication has a side effect. A *dropped* activity is acknowledged (200)
and logged once with what was wrong (the field, never its value), and no connector call is
made for it (``ThreadlineTeamsBot.process_activity``).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aiohttp import web

    from bots.teams.bot import ThreadlineTeamsBot


async def handle_messages(bot: ThreadlineTeamsBot, request: web.Request) -> web.StreamResponse:
    """``POST /api/messages`` (see the module docstring)."""
    from aiohttp import web

    from bots.teams.bot import MalformedActivity

    started = time.perf_counter()
    try:
        body = await _parse(request)
        status, answer = await bot.process_activity(body, request.headers.get("Authorization", ""))
    except web.HTTPException as refusal:
        bot.metrics.refused.labels(status=str(refusal.status)).inc()
        raise
    except PermissionError as error:
        bot.metrics.refused.labels(status="401").inc()
        raise web.HTTPUnauthorized() from error
    except MalformedActivity as error:
        bot.metrics.refused.labels(status="400").inc()
        raise web.HTTPBadRequest(text="malformed activity") from error
    finally:
        bot.metrics.ack_seconds.observe(time.perf_counter() - started)
    if answer is None:
        return web.Response(status=status)
    return web.json_response(answer, status=status)


async def _parse(request: web.Request) -> dict[str, Any]:
    """The activity a request carries, or the HTTP error that refuses it."""
    from aiohttp import web

    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(text="expected application/json")
    raw = await request.read()
    try:
        body = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, nested too deep
        raise web.HTTPBadRequest(text="body is not JSON") from error
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        raise web.HTTPBadRequest(text="not an activity")
    return body
