"""People's MCP sign-ins in the console: the redirect comes back to the console itself.

The console has no public address, so a server each person signs in to (``auth = "user"``)
sends them back to ``http://127.0.0.1:<port>/oauth/mcp/callback``, on this machine: the real
authorization server's page, the real redirect, nothing to expose. The page that finishes the
sign-in tells the console's own tab (a ``BroadcastChannel`` of the same origin), which asks
the waiting question again in the thread it was asked in, as whoever asked it.

>>> from agent_core.mcp.auth.signin import WaitingQuestion
>>> from agent_core.mcp.hub import SignedIn
>>> waiting = WaitingQuestion(conversation_id="c", question="who </script>",
...                           request={"user_id": "U0ANA", "thread_id": "t1", "is_dm": True})
>>> page = sign_in_page(SignedIn("console:local:U0ANA", "local", "tickets", waiting))
>>> "</script>\\"" in page, "who <\\\\/script>" in page
(False, True)
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_core.mcp.hub import SignedIn


def sign_in_page(signed: SignedIn) -> str:
    """The page a finished sign-in shows in the console: it says so, and tells the
    console's tab which question to ask again."""
    waiting = signed.waiting
    request = waiting.request if waiting is not None else {}
    message = {
        "type": "mcp-connected",
        "server": signed.server,
        "question": waiting.question if waiting is not None else "",
        "user_id": request.get("user_id"),
        "thread_id": request.get("thread_id"),
        "place": "dm" if request.get("is_dm") else "channel",
    }
    data = json.dumps(message).replace("</", "<\\/")  # nothing in it can end the script
    title = html.escape(f"Connected to {signed.server}")
    return (
        "<!doctype html><meta charset=utf-8><title>Threadline console</title>"
        f"<h1>{title}</h1><p>Back in the console, your question is being answered. "
        "You can close this tab.</p>"
        f"<script>new BroadcastChannel('threadline-console').postMessage({data});</script>"
    )
