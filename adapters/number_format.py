"""Numbers as people read them, the same way in both channels, in the asker's locale.

A table cell or a chart summary shows an integer grouped (``12,345``), a float of 1,000 or
more with two decimals (``968,424.30``) and a smaller one with four significant digits
(``3.142``), with the separators of the locale: Teams sends the asker's (``en-US``,
``de-DE``...), Slack's events carry none, so Slack uses the default (``en-US``). Each reply
stream sets the locale of its turn (``number_locale``) around rendering.

>>> format_number(968424.3)
'968,424.30'
>>> format_number(968424.3, "de-DE"), format_number(1234567, "fr-FR")
('968.424,30', '1\u202f234\u202f567')
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from contextvars import ContextVar
from decimal import Decimal

DEFAULT_LOCALE = "en-US"

_COMMA_POINT = (",", ".")
_POINT_COMMA = (".", ",")
_SPACE_COMMA = ("\u00a0", ",")
_SEPARATORS: dict[str, tuple[str, str]] = {
    **dict.fromkeys(
        ["de", "nl", "it", "es", "pt", "da", "tr", "el", "ro", "hr", "sl", "sr", "id", "vi"],
        _POINT_COMMA,
    ),
    **dict.fromkeys(
        ["sv", "nb", "no", "fi", "cs", "pl", "ru", "uk", "sk", "hu", "bg", "lt", "lv", "et"],
        _SPACE_COMMA,
    ),
    "fr": ("\u202f", ","),
}
"""(group, decimal) per language (CLDR); every other language groups with "," and "."."""
_REGIONS: dict[str, tuple[str, str]] = {
    "de-ch": ("\u2019", "."),
    "it-ch": ("\u2019", "."),
    "fr-ch": ("\u202f", "."),
    "pt-pt": _SPACE_COMMA,
    "es-mx": _COMMA_POINT,
    "es-us": _COMMA_POINT,
}

_locale: ContextVar[str | None] = ContextVar("threadline_number_locale", default=None)


def separators(locale: str | None) -> tuple[str, str]:
    """``(group, decimal)`` for a locale such as ``de-DE`` (``("," , ".")`` when unknown)."""
    if not locale:
        return _COMMA_POINT
    tag = locale.replace("_", "-").lower()
    return _REGIONS.get(tag) or _SEPARATORS.get(tag.split("-")[0], _COMMA_POINT)


def format_number(value: int | float | Decimal, locale: str | None = None) -> str:
    """``value`` as text in ``locale`` (default: the current turn's, see ``number_locale``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        text = f"{value:,}"
    else:
        number = float(value)
        if math.isnan(number) or math.isinf(number):
            return str(number)
        if abs(number) >= 1e15:  # beyond what a person reads digit by digit
            text = f"{number:.6g}"
        else:
            text = f"{number:,.2f}" if abs(number) >= 1000 else f"{number:.4g}"
    group, decimal = separators(locale or _locale.get())
    return text.replace(",", "\0").replace(".", decimal).replace("\0", group)


@contextlib.contextmanager
def number_locale(locale: str | None) -> Iterator[None]:
    """Numbers formatted inside the block use ``locale``."""
    token = _locale.set(locale)
    try:
        yield
    finally:
        _locale.reset(token)
