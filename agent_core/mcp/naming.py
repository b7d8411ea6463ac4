"""The names MCP tools go by in Threadline.

A server's tool keeps its own name when it can: when that name is free. Where it would
collide with one of the agent's own tools (a built-in such as ``run_sql``) or with a tool of
another configured server, it is prefixed with its server's name (``tickets_search``), on
every server that has it, so which is which never depends on which server answered first.
Names are also made safe for every model API (letters, digits, ``_`` and ``-``, at most 64
characters).

>>> tool_name("search", "tickets", taken=frozenset(), elsewhere=frozenset())
'search'
>>> tool_name("run_sql", "warehouse", taken=frozenset({"run_sql"}), elsewhere=frozenset())
'warehouse_run_sql'
>>> tool_name("files.read", "docs", taken=frozenset(), elsewhere=frozenset({"files.read"}))
'docs_files_read'
"""

from __future__ import annotations

import re

MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def safe(name: str) -> str:
    """``name`` with what a model API refuses replaced (``_``) and cut to ``MAX_NAME``.

    >>> safe("tickets/search v2")
    'tickets_search_v2'
    """
    return _UNSAFE.sub("_", name).strip("_")[:MAX_NAME] or "tool"


def tool_name(remote: str, server: str, *, taken: frozenset[str], elsewhere: frozenset[str]) -> str:
    """The name ``server``'s tool ``remote`` goes by: its own (made safe) unless that is one
    of the agent's own tools (``taken``) or another server lists it too (``elsewhere``,
    their tools' names as the servers give them)."""
    own = safe(remote)
    if own not in taken and remote not in elsewhere and own not in {safe(n) for n in elsewhere}:
        return own
    return safe(f"{server}_{own}")[:MAX_NAME]
