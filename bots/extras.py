"""The optional parts of Threadline and the error that names the one a command misses.

The base install (``pip install threadline``) runs the agent, the local console and the
terminal chat. Each channel's server and the PNG chart renderer are extras::

    pip install 'threadline[slack]'     threadline slack           slack-bolt, prometheus-client
    pip install 'threadline[teams]'     threadline teams, teams-package   botbuilder, Pillow
    pip install 'threadline[charts]'    PNG charts (Slack fallback, Teams fallback, chat)
    pip install 'threadline[files]'     files shared with a question, as tables   DuckDB, openpyxl
    pip install 'threadline[bedrock]'   [llm] provider = "bedrock"                boto3
    pip install 'threadline[vertex]'    [llm] provider = "vertex"                 google-auth
    pip install 'threadline[foundry]'   [llm] foundry_auth = "entra"              azure-identity

(the providers' extras are named by ``agent_core.llm.providers`` when the model is built)

>>> missing("graph") in ([], ["langgraph"])
True
"""

from __future__ import annotations

import importlib.util

from agent_core.errors import ThreadlineError

EXTRAS: dict[str, tuple[str, ...]] = {
    "slack": ("slack_bolt", "prometheus_client"),
    "teams": ("botbuilder.core", "botbuilder.integration.aiohttp", "prometheus_client", "PIL"),
    "charts": ("matplotlib",),
    "graph": ("langgraph",),
    "files": ("duckdb", "openpyxl"),
    "bedrock": ("boto3", "botocore"),
    "vertex": ("google.auth",),
    "foundry": ("azure.identity",),
}
"""Each extra and the modules it brings (see ``[project.optional-dependencies]``)."""


class MissingExtra(ThreadlineError, RuntimeError):
    """A command needs an extra that is not installed; the message says how to install it.

    >>> print(MissingExtra("slack", "threadline slack", ["slack_bolt"]))
    threadline slack needs the 'slack' extra (missing: slack_bolt): pip install 'threadline[slack]'
    """

    def __init__(self, extra: str, needed_by: str, modules: list[str]) -> None:
        self.extra = extra
        super().__init__(
            f"{needed_by} needs the '{extra}' extra (missing: {', '.join(modules)}): "
            f"pip install 'threadline[{extra}]'"
        )


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a missing parent package
        return False


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that are not installed (``[]`` when it is)."""
    return [module for module in EXTRAS[extra] if not _installed(module)]


def installed(extra: str) -> bool:
    return not missing(extra)


def require(extra: str, needed_by: str = "this command") -> None:
    """Raise ``MissingExtra`` naming ``extra`` unless all its modules are installed."""
    absent = missing(extra)
    if absent:
        raise MissingExtra(extra, needed_by, absent)
