"""Database URLs: SQLAlchemy URLs, the driver each needs, and how they are shown (masked).

``THREADLINE_DATABASE_URL`` takes any SQLAlchemy URL. A URL without a driver gets the one
Threadline's extras install (``postgresql://`` -> psycopg 3, ``mysql://`` -> PyMySQL), and a
URL whose driver is missing fails at once with the extra to install, never mid-question.
Passwords are never shown: every log line and message uses ``mask_url``.

>>> mask_url("postgresql://bo:secret@db.internal:5432/shop")
'postgresql://bo:***@db.internal:5432/shop'
>>> extra_for("snowflake://me:pw@acct/db/public")
'snowflake'
"""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from agent_core.errors import ThreadlineError
from agent_core.masking import mask_secrets

EXTRAS: dict[str, str] = {
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "mssql": "mssql",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "duckdb": "duckdb",
}
"""SQLAlchemy backend -> the ``threadline[...]`` extra with its driver."""

DEFAULT_DRIVERS: dict[str, str] = {
    "postgresql": "psycopg",
    "mysql": "pymysql",
    "mariadb": "pymysql",
}
"""The driver a bare ``backend://`` URL gets: the one the extra installs."""

_ALIASES = {"postgres": "postgresql"}


class DatabaseConfigError(ThreadlineError, ValueError):
    """The database URL cannot be used as configured (malformed, unknown database, or its
    driver is not installed); the message says how to fix it and never holds a password."""


def parse_url(url: str | URL) -> URL:
    """``url`` as a SQLAlchemy ``URL``, with Threadline's default driver filled in.

    >>> parse_url("postgres://bo@db/shop").drivername
    'postgresql+psycopg'
    """
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise DatabaseConfigError(
            f"not a database URL ({_shape(str(url))}; expected e.g. "
            "postgresql://user:password@host:5432/database or sqlite:///path/to/file.db)"
        ) from None
    backend, _, driver = parsed.drivername.partition("+")
    backend = _ALIASES.get(backend, backend)
    driver = driver or DEFAULT_DRIVERS.get(backend, "")
    return parsed.set(drivername=f"{backend}+{driver}" if driver else backend)


def backend_of(url: str | URL) -> str:
    """``postgresql``, ``mysql``, ``sqlite``, ``duckdb``, ...

    >>> backend_of("postgresql+psycopg://db/x"), backend_of("sqlite:///x.db")
    ('postgresql', 'sqlite')
    """
    return parse_url(url).get_backend_name()


def extra_for(url: str | URL) -> str | None:
    """The extra that installs the URL's driver (``None``: nothing to install)."""
    return EXTRAS.get(backend_of(url))


def missing_driver(url: str | URL, missing: str) -> DatabaseConfigError:
    """The error for a URL whose driver (module ``missing``) is not installed."""
    backend = backend_of(url)
    extra = EXTRAS.get(backend)
    install = (
        f"pip install 'threadline[{extra}]'"
        if extra
        else "install the SQLAlchemy dialect and driver for it"
    )
    return DatabaseConfigError(
        f"{mask_url(url)}: the {backend} driver is not installed (no module {missing!r}); {install}"
    )


def shown_url(url: str) -> str:
    """A database URL as ``threadline config`` shows it: its password masked, and a URL
    that cannot be read shown by its shape only (a malformed URL may hold a password where
    ``mask_url`` cannot find it, e.g. ``bo:s3cret@db``).

    >>> shown_url("postgresql://bo:pw@db/x"), shown_url("bo:s3cret@db")
    ('postgresql://bo:***@db/x', '(not a database URL: no scheme:// in it)')
    """
    try:
        parse_url(url)
    except DatabaseConfigError:
        return f"(not a database URL: {_shape(url)})"
    return mask_url(url)


def _shape(text: str) -> str:
    """What a malformed URL looks like, without any of it that could be a secret.

    >>> _shape("postgresql//bo:s3cret@db/x"), _shape("mysql://bo:s3cret@db:port/x")
    ('no scheme:// in it', "scheme 'mysql'")
    """
    scheme, separator, _ = text.partition("://")
    if not separator or not scheme.replace("+", "").isalnum():
        return "no scheme:// in it"
    return f"scheme {scheme!r}"


def mask_url(url: str | URL) -> str:
    """The URL with its password (and secret query parameters) replaced by ``***``, as every
    log line shows it."""
    if isinstance(url, URL):
        url = url.render_as_string(hide_password=True)
    return mask_secrets(url)


def mask_text(text: str, *secrets: str | None) -> str:
    """``text`` with URL passwords and each of ``secrets`` replaced by ``***``.

    >>> mask_text("failed for postgresql://bo:pw1@db/x (pw1)", "pw1")
    'failed for postgresql://bo:***@db/x (***)'
    """
    return mask_secrets(text, *secrets)
