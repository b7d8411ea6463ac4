"""An MCP server of the support team's tickets, built with the ``mcp`` SDK, for the README's
"Your tools over MCP" (and run by the tests)::

    python examples/mcp_tickets.py                        # stdio: what [[mcp]] command starts
    python examples/mcp_tickets.py --http 8765            # http://127.0.0.1:8765/mcp
    python examples/mcp_tickets.py --http 8765 --oauth    # each person signs in (port 8766)

Its tools say what they do with the protocol's hints, which Threadline turns into approvals:
searching and reading are read-only (they run at once), filing a ticket adds without
destroying (asked once per conversation), closing one is destructive (asked every time).
With ``--oauth`` the server is protected by a small local authorization server (its sign-in
page asks for a name), and tickets are filed in the name of whoever signed in.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Literal

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from pydantic import BaseModel

READ_ONLY = ToolAnnotations(readOnlyHint=True)
ADDITIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=False)
DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True)


class Ticket(BaseModel):
    id: int
    title: str
    status: Literal["open", "closed"]
    filed_by: str


def build_server(*, auth: AuthSettings | None = None, token_verifier: object = None) -> MCPServer:
    """The tickets server (each call of this function has tickets of its own)."""
    tickets = [
        Ticket(id=1, title="Checkout page times out", status="open", filed_by="ana"),
        Ticket(id=2, title="Invoice PDF has the wrong VAT", status="open", filed_by="bo"),
        Ticket(id=3, title="Password reset mail is late", status="closed", filed_by="ana"),
    ]
    server = MCPServer(
        "tickets",
        instructions="The support team's tickets.",
        auth=auth,
        token_verifier=token_verifier,  # type: ignore[arg-type]
        log_level="WARNING",
    )

    def caller() -> str:
        token = get_access_token()
        return token.subject if token is not None and token.subject else "someone"

    @server.tool(annotations=READ_ONLY)
    def search_tickets(
        query: str = "", status: Literal["open", "closed", "any"] = "open"
    ) -> list[Ticket]:
        """Tickets whose title contains ``query`` (any case), by status."""
        return [
            t for t in tickets if query.lower() in t.title.lower() and status in ("any", t.status)
        ]

    @server.tool(annotations=READ_ONLY)
    def get_ticket(ticket_id: int) -> Ticket:
        """One ticket by its number."""
        for ticket in tickets:
            if ticket.id == ticket_id:
                return ticket
        raise ValueError(f"there is no ticket {ticket_id}")

    @server.tool(annotations=ADDITIVE)
    def file_ticket(title: str) -> Ticket:
        """File a new open ticket in the caller's name."""
        ticket = Ticket(id=len(tickets) + 1, title=title, status="open", filed_by=caller())
        tickets.append(ticket)
        return ticket

    @server.tool(annotations=DESTRUCTIVE)
    def close_ticket(ticket_id: int) -> str:
        """Close a ticket for good."""
        for ticket in tickets:
            if ticket.id == ticket_id:
                ticket.status = "closed"
                return f"ticket {ticket_id} closed"
        raise ValueError(f"there is no ticket {ticket_id}")

    @server.tool(annotations=READ_ONLY)
    def whoami() -> str:
        """Who the server thinks is calling."""
        return caller()

    return server


def oauth_server(port: int, authorization_port: int) -> tuple[MCPServer, object]:
    """The tickets server protected by a local authorization server on ``authorization_port``:
    ``(server, authorization_server)``."""
    from agent_core.mcp.testing import LocalAuthorizationServer

    issuer = f"http://127.0.0.1:{authorization_port}"
    authorization = LocalAuthorizationServer(issuer)
    settings = AuthSettings(
        issuer_url=issuer,  # type: ignore[arg-type]
        resource_server_url=f"http://127.0.0.1:{port}/mcp",  # type: ignore[arg-type]
        required_scopes=["tickets"],
        validate_token_resource=True,
    )
    return build_server(auth=settings, token_verifier=authorization.verifier()), authorization


async def _serve_http(port: int, oauth: bool) -> None:
    import uvicorn
    from starlette.applications import Starlette

    apps = []
    if oauth:
        server, authorization = oauth_server(port, port + 1)
        apps.append((Starlette(routes=authorization.routes()), port + 1))  # type: ignore[attr-defined]
    else:
        server = build_server()
    apps.append((server.streamable_http_app(), port))
    servers = [
        uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=p, log_level="warning"))
        for app, p in apps
    ]
    await asyncio.gather(*(s.serve() for s in servers))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    parser.add_argument("--oauth", action="store_true", help="each person signs in")
    args = parser.parse_args()
    if args.http is None:
        build_server().run()
    else:
        asyncio.run(_serve_http(args.http, args.oauth))


if __name__ == "__main__":
    main()
