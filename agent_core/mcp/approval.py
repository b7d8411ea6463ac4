"""Whether an MCP tool asks before it runs: the configuration's word, else the server's hints.

A server describes each tool with hints (``ToolAnnotations``). Threadline reads them as::

    readOnlyHint = true                          "never"     reads only: runs at once
    destructiveHint = true, or no hints at all   "always"    may change or delete: asks first
    readOnlyHint = false, destructiveHint = false "ask_once" adds, never destroys: asks once

(the MCP specification's default for ``destructiveHint`` is true, so a tool that says
nothing is treated as destructive). An admin's ``approval = { tool = "..." }`` in the
server's ``[[mcp]]`` table wins over the hints: hints come from the server, the
configuration from someone Threadline trusts.

>>> default_approval(None)
'always'
>>> default_approval({"readOnlyHint": True})
'never'
>>> default_approval({"readOnlyHint": False, "destructiveHint": False})
'ask_once'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_core.tool_contract import ApprovalMode


def _hint(annotations: Any, wire: str, attribute: str) -> bool | None:
    if annotations is None:
        return None
    value = annotations.get(wire) if isinstance(annotations, Mapping) else None
    if value is None and not isinstance(annotations, Mapping):
        value = getattr(annotations, attribute, None)
    return value if isinstance(value, bool) else None


def default_approval(annotations: Any) -> ApprovalMode:
    """The approval a tool's hints imply (``annotations``: the SDK's ``ToolAnnotations`` or
    its wire form); see the module docstring."""
    if _hint(annotations, "readOnlyHint", "read_only_hint"):
        return "never"
    destructive = _hint(annotations, "destructiveHint", "destructive_hint")
    read_only = _hint(annotations, "readOnlyHint", "read_only_hint")
    if destructive is False and read_only is False:
        return "ask_once"
    return "always"


def approval_for(
    tool: str, annotations: Any, configured: Mapping[str, ApprovalMode]
) -> ApprovalMode:
    """The configuration's approval for ``tool`` when it names one, else the hints'.

    >>> approval_for("search", {"readOnlyHint": True}, {"search": "always"})
    'always'
    """
    return configured.get(tool) or default_approval(annotations)
