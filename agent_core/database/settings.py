"""``[database]``, and a profile's own ``database``: which database answers, read-only how,
and who runs as whom in it ("data follows the asker", ``agent_core.database.identity``)::

    [database]
    url = "postgresql://threadline@warehouse/analytics"   # THREADLINE_DATABASE_URL
    unmapped = "refuse"                # people no mapping names get no data ("default": url)
    allowed_functions = ["reporting.fiscal_quarter"]      # the operator's own, vouched for

    [database.roles]                   # PostgreSQL (SET LOCAL ROLE) and Snowflake (role=)
    "user:cfo@example.com" = "finance_all"                # a person, by email or user id
    finance = "finance_reader"                            # a group
    sales = "sales_reader"

    [database.urls]                    # any dialect: a database URL per group (or person)
    emea = "snowflake://svc_emea:...@acct/sales/public"

    [[profiles]]                       # a profile's own database, the same keys
    name = "finance"
    database = { url = "postgresql://threadline@finance-db/ledger", unmapped = "refuse" }

>>> DatabaseConfig(url="postgresql://u@h/db", roles={"finance": "fin_reader"}).maps_people
True
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from agent_core.database.urls import DatabaseConfigError, backend_of, parse_url, shown_url
from agent_core.settings import CommaList, Section, env, masked

Unmapped = Literal["default", "refuse"]
"""What a person no mapping names gets: the database's own ``url`` (its login user), or no
data at all (one sentence, and nothing runs)."""

ROLE_BACKENDS = ("postgresql", "snowflake")
"""Where ``[database.roles]`` applies: PostgreSQL sets the role in each query's transaction,
Snowflake connects with ``role=``."""


class DatabaseConfig(Section):
    """One database: ``[database]`` (``DatabaseSettings``) or a profile's ``database``."""

    model_config = SettingsConfigDict(
        case_sensitive=True, env_ignore_empty=True, extra="forbid", populate_by_name=True
    )

    url: str | None = Field(None, validation_alias=env("url", "THREADLINE_DATABASE_URL"))
    """A SQLAlchemy URL (``postgresql://user:password@host/db``); the password is masked."""
    training_dir: Path | None = Field(
        None, validation_alias=env("training_dir", "THREADLINE_TRAINING_DIR")
    )
    """Documentation (``*.md``) and question -> SQL examples (``*.sql``) about the data."""
    schema_max_tokens: int = Field(
        8000, gt=0, validation_alias=env("schema_max_tokens", "THREADLINE_SCHEMA_MAX_TOKENS")
    )
    """The most schema text (in tokens) one question's prompt gets."""
    roles: dict[str, str] = Field(default_factory=dict)
    """Group (or ``user:EMAIL-OR-ID``) -> database role; the person's own entry first, then
    the first of their groups in the order written."""
    urls: dict[str, str] = Field(default_factory=dict)
    """Group (or ``user:EMAIL-OR-ID``) -> a database URL of its own (any dialect); looked up
    before ``roles``, in the same order."""
    unmapped: Unmapped = Field(
        "default", validation_alias=env("unmapped", "THREADLINE_DATABASE_UNMAPPED")
    )
    allowed_functions: CommaList = Field(
        default_factory=list,
        validation_alias=env("allowed_functions", "THREADLINE_DATABASE_FUNCTIONS"),
    )
    """Functions of the operator's own (``schema.name``) added to the dialect's allow list."""
    allow_privileged_user: bool = Field(
        False,
        validation_alias=env("allow_privileged_user", "THREADLINE_DATABASE_ALLOW_PRIVILEGED_USER"),
    )
    """Use a PostgreSQL superuser (or a member of the server roles) anyway, with a WARNING on
    every connection: for a throwaway sandbox only."""

    def shown(self, name: str) -> str:
        """``url`` and ``urls`` by their shape when malformed (see ``shown_url``)."""
        if name == "url" and self.url is not None:
            return shown_url(self.url)
        if name == "urls" and self.urls:
            return ", ".join(f"{key}={shown_url(url)}" for key, url in self.urls.items())
        return masked(getattr(self, name))

    @property
    def maps_people(self) -> bool:
        """Whether anyone is mapped to a role or URL of their own."""
        return bool(self.roles or self.urls)

    @field_validator("roles", "urls")
    @classmethod
    def _named(cls, mapping: dict[str, str]) -> dict[str, str]:
        for key, value in mapping.items():
            if not key.strip() or not value.strip():
                raise ValueError(f"an empty name or value in the mapping ({key!r})")
            if "\x00" in key or "\x00" in value:
                raise ValueError("a name may not hold a NUL character")
        return mapping

    @field_validator("urls")
    @classmethod
    def _urls_parse(cls, urls: dict[str, str]) -> dict[str, str]:
        for key, url in urls.items():
            try:
                parse_url(url)
            except DatabaseConfigError as error:
                raise ValueError(f"[database.urls] {key}: {error}") from None
        return urls

    @model_validator(mode="after")
    def _refusing_needs_a_mapping(self) -> DatabaseConfig:
        if self.unmapped == "refuse" and not self.maps_people:
            raise ValueError(
                'unmapped = "refuse" with no [database.roles] or [database.urls]: nobody '
                "could ask; map groups, or leave unmapped at its default"
            )
        return self

    @model_validator(mode="after")
    def _roles_need_a_dialect_with_roles(self) -> DatabaseConfig:
        if not self.roles:
            return self
        urls = [u for u in (self.url, *self.urls.values()) if u]
        backends = sorted({backend_of(u) for u in urls} - set(ROLE_BACKENDS))
        if backends:
            raise ValueError(
                f"[database.roles] needs PostgreSQL or Snowflake; {', '.join(backends)} has no "
                "roles to set: map groups to URLs of their own with [database.urls] instead"
            )
        return self


class DatabaseSettings(DatabaseConfig):
    """``[database]``: the data the built-in SQL agent answers from (the demo shop when
    ``url`` is unset), and the files people share with a question."""

    model_config = SettingsConfigDict(
        case_sensitive=True, env_ignore_empty=True, extra="ignore", populate_by_name=True
    )
    table = "database"

    files: bool = Field(True, validation_alias=env("files", "THREADLINE_FILES"))
    """Read files shared with a question (CSV, TSV, XLSX, Parquet, JSON) as the asker's
    tables in that conversation (needs the ``files`` extra)."""
    files_max_mb: float = Field(
        25.0, gt=0, le=1024, validation_alias=env("files_max_mb", "THREADLINE_FILES_MAX_MB")
    )
    """The largest shared file read, in MB; larger ones are refused with a message."""

    def config(self) -> DatabaseConfig:
        """The database part alone (what a profile's ``database`` holds)."""
        return DatabaseConfig.model_validate(
            self.model_dump(include=set(DatabaseConfig.model_fields))
        )
