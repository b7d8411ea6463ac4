"""Secrets never shown: passwords inside URLs, secret query parameters, and given secrets,
masked wherever text reaches a person or a log (``threadline config``, ``doctor``, errors,
and every log record of a ``threadline`` command: ``mask_every_log``).

Every ``scheme://`` in a text is masked, whatever the scheme (``redis://:pw@cache``,
``postgresql://bo:pw@db``, ``https://user:pw@host``): the password is everything between
the user's ``:`` and the *last* ``@`` of the address, so a password holding ``@``, ``/`` or
``:`` is masked whole; query parameters named like secrets (``password=``, ``token=``,
``private_key=``...) too. It masks too much rather than too little.

>>> mask_secrets("redis://:s3cret@cache:6379/0 and postgresql://bo:p@ss/w:rd@db/x?sslmode=on")
'redis://:***@cache:6379/0 and postgresql://bo:***@db/x?sslmode=on'
>>> mask_secrets("snowflake://me@acct/db?password=hunter2&role=analyst")
'snowflake://me@acct/db?password=***&role=analyst'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_END = re.compile(r"\s", re.ASCII)
_SECRET_KEY = re.compile(
    r"pass(word|wd|phrase)?|pwd|secret|token|api[_-]?key|private[_-]?key|credential|"
    r"auth|signature|sig",
    re.IGNORECASE,
)
_QUERY_PAIR = re.compile(r"([?&;])([^=&;#]+)=([^&;#]*)")
MASK = "***"


def _userinfo_end(rest: str) -> int:
    """Where the userinfo of ``rest`` (a URL after ``://``) ends: its last ``@`` before the
    query, or the last ``@`` at all when a password holds ``?``; -1 when there is none."""
    head = re.split(r"[?#]", rest, maxsplit=1)[0]
    if "@" in head:
        return head.rfind("@")
    at = rest.rfind("@")
    return at if at > 0 and ":" in rest[:at] else -1


def mask_url(url: str) -> str:
    """One URL with its password and secret query parameters masked.

    >>> mask_url("postgresql://bo:pa:ss@db:5432/shop")
    'postgresql://bo:***@db:5432/shop'
    >>> mask_url("https://example.com/a@b")
    'https://example.com/a@b'
    """
    found = _SCHEME.match(url)
    if found is None:
        return url
    scheme, rest = url[: found.end()], url[found.end() :]
    at = _userinfo_end(rest)
    if at >= 0 and ":" in rest[:at]:
        user = rest[: rest.index(":")]
        rest = f"{user}:{MASK}{rest[at:]}"
    return scheme + _QUERY_PAIR.sub(_masked_pair, rest)


def _masked_pair(match: re.Match[str]) -> str:
    separator, key, value = match.groups()
    if value and _SECRET_KEY.search(key):
        return f"{separator}{key}={MASK}"
    return match.group(0)


def mask_secrets(text: str, *secrets: str | None) -> str:
    """``text`` with every URL in it (up to the next whitespace) masked (``mask_url``) and
    each of ``secrets`` (a password known to the caller) replaced by ``***``."""
    parts: list[str] = []
    position = 0
    for found in _SCHEME.finditer(text):
        if found.start() < position:
            continue  # inside the URL already masked
        end = _END.search(text, found.end())
        stop = end.start() if end else len(text)
        parts += [text[position : found.start()], mask_url(text[found.start() : stop])]
        position = stop
    masked = "".join([*parts, text[position:]])
    for secret in secrets:
        if secret and len(secret) >= 3:
            masked = masked.replace(secret, MASK)
    return masked


_PATH = re.compile(r"""(?<![\w:/.])(?:[A-Za-z]:\\|/)(?:[^\s"'/\\]+[/\\])+[^\s"',)]*""")


def hide_paths(text: str) -> str:
    """``text`` with absolute file paths replaced by ``<path>`` (a database engine's message
    names the server's files; the asker and the model need not see them).

    >>> hide_paths('IO Error: Cannot open "/srv/data/shop.duckdb": busy; see a/b')
    'IO Error: Cannot open "<path>": busy; see a/b'
    """
    return _PATH.sub("<path>", text)


class SecretsFilter(logging.Filter):
    """Masks URLs' passwords in every record it passes (message and arguments).

    >>> record = logging.LogRecord("x", logging.INFO, "", 0, "url %s", ("redis://:pw@c",), None)
    >>> SecretsFilter().filter(record), record.getMessage()
    (True, 'url redis://:***@c')
    """

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = mask_secrets(str(record.msg))
        if isinstance(record.args, Mapping):
            record.args = {key: _masked_argument(arg) for key, arg in record.args.items()}
        elif record.args:
            record.args = tuple(_masked_argument(arg) for arg in record.args)
        return True


def _masked_argument(arg: Any) -> Any:
    if isinstance(arg, str | BaseException) or hasattr(arg, "render_as_string"):
        return mask_secrets(str(arg))
    return arg


class MaskingRecords:
    """A log record factory: every record of the process is masked as it is made (its
    message, arguments and traceback), whichever logger or handler it goes to. The
    command line installs it once (``mask_every_log``).

    >>> factory = MaskingRecords(logging.LogRecord)
    >>> factory("x", logging.INFO, "", 0, "at %s", ("redis://:pw@c",), None).getMessage()
    'at redis://:***@c'
    """

    def __init__(self, make: Any) -> None:
        self.make = make
        self._filter = SecretsFilter()

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = self.make(*args, **kwargs)
        self._filter.filter(record)
        if record.exc_info and not record.exc_text:
            record.exc_text = mask_secrets(logging.Formatter().formatException(record.exc_info))
        return record


def mask_every_log() -> None:
    """Mask every log record this process makes from now on (idempotent)."""
    current = logging.getLogRecordFactory()
    if not isinstance(current, MaskingRecords):
        logging.setLogRecordFactory(MaskingRecords(current))
