"""The data identity: who a person's queries run as in the database, decided in one place.

``data_identity(user, config)`` reads the configuration (``[database]`` or a profile's
``database``: ``agent_core.database.settings``) and maps a resolved ``User`` to a
``DataIdentity``: which database, which of its URLs (``[database.urls]``), which role
(``[database.roles]``), and the person's own settings (PostgreSQL ``threadline.user_id``,
``threadline.email``, ``threadline.groups``, for row-level-security policies). Every
consumer takes it from here: ``run_sql``, ``visualize_data``, ``query_files``' join, schema
retrieval, memories, ``threadline eval --as`` and scheduled questions
(``agent_core.database.access.DataAccess`` runs queries as one).

Precedence, when several entries name a person (documented in the README, "Who sees which
rows"):

1. ``[database.urls]`` chooses the URL, then ``[database.roles]`` the role, each on its own;
2. in each table the person's own entry (``user:EMAIL`` or ``user:ID``) wins;
3. otherwise the first of the person's groups *in the order the table lists them*;
4. no entry in either table: ``unmapped = "default"`` runs as the database's own user,
   ``unmapped = "refuse"`` raises ``NoDataAccess`` (one sentence, nothing runs).

>>> from agent_core.database.settings import DatabaseConfig
>>> from agent_core.users import User
>>> config = DatabaseConfig(url="postgresql://bot@db/dw",
...                         roles={"finance": "fin_reader", "sales": "sales_reader"})
>>> ana = User(id="slack:T1:U1", email="ana@example.com", group_memberships=["sales", "finance"])
>>> data_identity(ana, config).role, data_identity(ana, config).key
('fin_reader', 'default/-/fin_reader')
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from agent_core.database.settings import DatabaseConfig
from agent_core.errors import PermissionDeniedError
from agent_core.users import User

USER_PREFIX = "user:"
SETTINGS = ("threadline.user_id", "threadline.email", "threadline.groups")
"""The PostgreSQL settings each query carries (``current_setting('threadline.email', true)``
in a policy); ``threadline.groups`` is a JSON array of the person's groups."""


class NoDataAccess(PermissionDeniedError):
    """The person has no data identity here (``unmapped = "refuse"``); nothing runs."""

    def __init__(self, database: str = "default") -> None:
        self.database = database
        super().__init__(
            "You have no data access here; ask an admin to give one of your groups access "
            "to this database."
        )


class DataIdentity(BaseModel):
    """Who one person's queries run as: ``database`` (``default`` or a profile's name), the
    ``[database.urls]`` entry that chose the URL (None: the database's own ``url``), the
    ``role`` (None: the URL's user), and the person's settings.

    Two people with the same ``key`` see the same tables (row-level policies may still
    tell them apart by the settings): memories, verified examples and schema caches are
    shared by ``key`` and never across keys.

    >>> DataIdentity(role="fin_reader").label
    "role 'fin_reader'"
    """

    model_config = ConfigDict(frozen=True)

    database: str = "default"
    url_name: str | None = None
    role: str | None = None
    user_id: str = ""
    email: str = ""
    groups: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """``database/url entry/role`` (``-`` where the default applies)."""
        return f"{self.database}/{self.url_name or '-'}/{self.role or '-'}"

    @property
    def is_default(self) -> bool:
        """The database's own URL and user: what every query ran as before identities."""
        return self.url_name is None and self.role is None

    @property
    def label(self) -> str:
        """How audit records and ``/status`` name it (never a URL: they hold passwords)."""
        parts = [f"url {self.url_name!r}"] if self.url_name else []
        parts += [f"role {self.role!r}"] if self.role else []
        where = "" if self.database == "default" else f" in database {self.database!r}"
        return (" + ".join(parts) or "the database's own user") + where

    def settings(self) -> dict[str, str]:
        """The person's ``threadline.*`` settings for row-level-security policies."""
        groups = json.dumps(list(self.groups), ensure_ascii=False)
        return dict(zip(SETTINGS, (self.user_id, self.email, groups), strict=True))


def names_of(user: User) -> set[str]:
    """How a ``user:`` entry may name a person: email (any case), user id, platform id.

    >>> sorted(names_of(User(id="slack:T1:U1", email="Ana@Example.com")))
    ['U1', 'ana@example.com', 'slack:T1:U1']
    """
    names = {user.id, user.id.rsplit(":", 1)[-1]}
    if user.email:
        names.add(user.email.lower())
    return {name for name in names if name}


def entry_for(user: User, mapping: Mapping[str, str]) -> str | None:
    """The key of ``mapping`` that names ``user`` (see the precedence above), or None."""
    names = names_of(user)
    for key in mapping:
        if key.startswith(USER_PREFIX):
            wanted = key.removeprefix(USER_PREFIX)
            if wanted in names or wanted.lower() in names:
                return key
    groups = set(user.group_memberships)
    return next((key for key in mapping if key in groups), None)


def data_identity(user: User, config: DatabaseConfig, *, database: str = "default") -> DataIdentity:
    """The data identity ``config`` gives ``user`` in ``database``; raises ``NoDataAccess``
    when nothing maps them and ``config.unmapped`` is ``"refuse"``."""
    url_key = entry_for(user, config.urls)
    role_key = entry_for(user, config.roles)
    if config.maps_people and url_key is None and role_key is None:
        if config.unmapped == "refuse":
            raise NoDataAccess(database)
    return DataIdentity(
        database=database,
        url_name=url_key,
        role=config.roles[role_key] if role_key is not None else None,
        user_id=user.id,
        email=user.email or "",
        groups=tuple(user.group_memberships),
    )
