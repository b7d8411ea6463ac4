"""Settings from ``threadline.toml`` + ``.env`` + the environment, loaded once.

Each table of the file is a ``Section`` (a pydantic-settings ``BaseSettings``) whose fields
name the environment variables that set them too; the environment wins over ``.env``, which
wins over the file, which wins over the defaults::

    # threadline.toml                         # the same from the environment
    app = "examples/weather.py:agent"         # THREADLINE_APP
    [slack]
    bot_token = "xoxb-..."                    # SLACK_BOT_TOKEN
    admin_users = ["U123"]                    # SLACK_ADMIN_USERS=U123,U456

``load_sections`` validates every section at once and raises one ``ConfigError`` listing
every problem (where, what is wrong, how to fix it), never echoing a value; ``Loaded``
remembers where each value came from, for ``threadline config``.

>>> from pydantic import Field
>>> class Greeting(Section):
...     table = "greeting"
...     word: str = Field("hello", validation_alias=env("word", "GREETING_WORD"))
>>> os.environ["GREETING_WORD"] = "hi"
>>> loaded = load_sections([Greeting], file=None)
>>> loaded.section(Greeting).word, loaded.origin(Greeting, "word")
('hi', 'environment GREETING_WORD')
>>> del os.environ["GREETING_WORD"]
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self, TypeVar

from dotenv import dotenv_values
from pydantic import (
    AliasChoices,
    BeforeValidator,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from agent_core.errors import ThreadlineError
from agent_core.masking import mask_secrets

CONFIG_FILE = "threadline.toml"
DOTENV_FILE = ".env"

log = logging.getLogger("threadline.settings")

S = TypeVar("S", bound="Section")


def env(name: str, *variables: str) -> AliasChoices:
    """The names a setting is read under: its key in the file, then its environment
    variables (the first one present wins)."""
    return AliasChoices(name, *variables)


def _split_commas(value: object) -> object:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(_split_commas)]
"""A list written as a TOML array, or as ``A,B,C`` in the environment."""


class Section(BaseSettings):
    """One table of ``threadline.toml`` (``table = ""``: the top level).

    Building one directly (``SlackSettings(bot_token=...)``) reads nothing else, so tests
    are never affected by a developer's environment; ``load_sections`` reads the file,
    ``.env`` and the environment, and ``from_env(mapping)`` reads one mapping of variables.
    """

    model_config = SettingsConfigDict(
        case_sensitive=True, env_ignore_empty=True, extra="ignore", populate_by_name=True
    )
    table: ClassVar[str] = ""
    renamed: ClassVar[Mapping[str, str]] = {}
    """Old names (keys of the file, environment variables) -> the setting they now set:
    still read, with a deprecation line in the log each time one is used."""

    def problems(self) -> list[str]:
        """What the section lacks as a whole (settings that need each other), each said so
        a person can fix it; empty when it is complete. A section with problems does not
        validate, except when read ``partial`` (``threadline doctor`` checks the rest)."""
        return []

    partial: ClassVar[bool] = False
    """True for ``partial_kind()``: validated without ``problems()``."""

    def shown(self, name: str) -> str:
        """Setting ``name`` as ``threadline config`` shows it (``masked``); a section whose
        values need more than that (a malformed URL, shown by its shape) says so here."""
        return masked(getattr(self, name))

    @model_validator(mode="after")
    def _complete(self) -> Self:
        if not self.partial and (problems := self.problems()):
            raise ValueError("; ".join(problems))
        return self

    @classmethod
    def partial_kind(cls) -> type[Self]:
        """The section, validated without what it lacks as a whole (its ``problems()`` are
        the caller's to report): ``threadline doctor`` still checks the rest."""
        found = _PARTIAL.get(cls)
        if found is None:
            namespace = {
                "__module__": cls.__module__,
                "__annotations__": {"partial": "ClassVar[bool]"},
            }
            found = _PARTIAL[cls] = type(cls.__name__, (cls,), {**namespace, "partial": True})
        return found  # type: ignore[return-value]

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, values: Any) -> Any:
        """``Section(old_name=...)`` sets the new name (and says so in the log)."""
        if not isinstance(values, dict) or not cls.renamed:
            return values
        source = _Source()
        _add_renamed(cls, source, values, "argument")
        if not source.values:
            return values
        kept = {key: value for key, value in values.items() if key not in cls.renamed}
        return {**{name: value for name, (value, _) in source.values.items()}, **kept}

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)  # the other sources are read by load_sections, with origins

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Self:
        """The section from environment variables alone (``os.environ`` by default);
        keyword arguments win. Raises ``ConfigError`` listing every problem."""
        variables = os.environ if environ is None else environ
        sources = [
            _Source({k: (v, f"--{k.replace('_', '-')}") for k, v in overrides.items()}),
            _named(cls, variables, "environment"),
        ]
        section, _, problems = _validate(cls, sources)
        if section is None:
            raise ConfigError(problems)
        return section


_PARTIAL: dict[type[Section], type[Section]] = {}
"""``Section.partial_kind`` of each section, made once."""


@dataclass(frozen=True)
class ConfigProblem:
    """One thing wrong with the configuration, said so a person can fix it."""

    where: str
    """``threadline.toml:12 [slack] bot_token``, ``environment SLACK_BOT_TOKEN``, ..."""
    problem: str
    fix: str = ""

    def __str__(self) -> str:
        return f"{self.where}: {self.problem}" + (f" ({self.fix})" if self.fix else "")


class ConfigError(ThreadlineError, ValueError):
    """Every problem found, one per line."""

    def __init__(self, problems: Sequence[ConfigProblem]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {problem}" for problem in self.problems)
        super().__init__(f"{len(self.problems)} problem(s) in the configuration:\n{lines}")


@dataclass
class _Source:
    """The values one source gives a section: field name -> (value, where it came from)."""

    values: dict[str, tuple[Any, str]] = field(default_factory=dict)


@dataclass
class Loaded:
    """The validated sections and where each value came from."""

    sections: dict[type[Section], Section]
    origins: dict[tuple[str, str], str]
    file: Path | None

    def section(self, kind: type[S]) -> S:
        found = self.sections[kind]
        assert isinstance(found, kind)
        return found

    def origin(self, kind: type[Section], name: str) -> str:
        return self.origins.get((kind.table, name), "default")

    def rows(self) -> list[tuple[str, str, str]]:
        """``(setting, value, origin)`` for every setting, secrets masked."""
        rows = []
        for kind, section in self.sections.items():
            for name in type(section).model_fields:
                key = f"{kind.table}.{name}" if kind.table else name
                rows.append((key, section.shown(name), self.origin(kind, name)))
        return rows


def masked(value: object) -> str:
    """A value as ``threadline config`` shows it: secrets (and passwords in URLs) masked.

    >>> masked(SecretStr("xoxb-123")), masked("postgresql://bo:pw@db/x"), masked(None)
    ('********', 'postgresql://bo:***@db/x', '(not set)')
    """
    if value is None:
        return "(not set)"
    if isinstance(value, SecretStr):
        return "********" if value.get_secret_value() else "(empty)"
    if isinstance(value, list | tuple):
        if not value:
            return "(none)"
        text = ", ".join(str(getattr(item, "name", item)) for item in value)
    else:
        text = str(value)
    return mask_secrets(text)


# -- reading the sources (pydantic-settings' own) ------------------------------------------


def _variables(kind: type[Section], name: str) -> list[str]:
    alias = kind.model_fields[name].validation_alias
    choices = alias.choices if isinstance(alias, AliasChoices) else []
    return [str(choice) for choice in choices[1:] if isinstance(choice, str)]


def _named(kind: type[Section], variables: Mapping[str, str | None], label: str) -> _Source:
    """The values ``variables`` give a section (the first of each field's names present)."""
    values = {}
    for name in kind.model_fields:
        variable = next((v for v in _variables(kind, name) if variables.get(v)), None)
        if variable is not None:
            values[name] = variables[variable]
    source = _labelled(kind, values, variables, label)
    _add_renamed(kind, source, variables, label)
    return source


def _add_renamed(
    kind: type[Section], source: _Source, variables: Mapping[str, Any], label: str
) -> None:
    """The values ``variables`` give under an old name (``Section.renamed``), where the new
    name gives none; each one used is logged as deprecated."""
    for old, name in kind.renamed.items():
        value = variables.get(old)
        if value is None or value == "" or name not in kind.model_fields:
            continue
        new = f"[{kind.table}] {name}" if kind.table else name
        log.warning("%s %s is deprecated: it sets %s; use that name", label, old, new)
        if name not in source.values:
            source.values[name] = (value, f"{label} {old} (deprecated)")


def _labelled(
    kind: type[Section],
    values: Mapping[str, Any],
    variables: Mapping[str, str | None],
    label: str,
) -> _Source:
    """What an environment-like source gave, each value labelled with its variable."""
    source = _Source()
    for name, value in values.items():
        if name in kind.model_fields:
            variable = next((v for v in _variables(kind, name) if variables.get(v)), name)
            source.values[name] = (value, f"{label} {variable}")
    return source


def _from_file(
    kind: type[Section], file: Path | None, lines: _Lines, document: Mapping[str, Any]
) -> _Source:
    source = _Source()
    if file is None or not file.exists() or (kind.table and kind.table not in document):
        return source
    header = (kind.table,) if kind.table else None
    table = TomlConfigSettingsSource(kind, toml_file=file, toml_table_header=header)()
    for name, value in table.items():
        if name in kind.model_fields:
            source.values[name] = (value, lines.where(kind.table, name))
    old = {name: value for name, value in table.items() if name in kind.renamed}
    _add_renamed(kind, source, old, lines.label)
    return source


def _sources(
    kind: type[Section],
    file: Path | None,
    dotenv: Path | None,
    lines: _Lines,
    document: Mapping[str, Any],
    given: Mapping[str, Any],
) -> list[_Source]:
    """Highest priority first: the command line, the environment, ``.env``, the file."""
    command_line = _Source({k: (v, f"--{k.replace('_', '-')}") for k, v in given.items()})
    environment = _labelled(kind, EnvSettingsSource(kind)(), os.environ, "environment")
    _add_renamed(kind, environment, os.environ, "environment")
    dotenv_source = _Source()
    if dotenv is not None and dotenv.exists():
        values = DotEnvSettingsSource(kind, env_file=dotenv)()
        found = dotenv_values(dotenv)
        dotenv_source = _labelled(kind, values, found, dotenv.name)
        _add_renamed(kind, dotenv_source, found, dotenv.name)
    return [command_line, environment, dotenv_source, _from_file(kind, file, lines, document)]


class _Lines:
    """Where a key stands in the TOML file (tomllib keeps no positions)."""

    def __init__(self, path: Path | None, text: str) -> None:
        self.label = path.name if path else CONFIG_FILE
        self._positions: dict[tuple[str, str], int] = {}
        table = ""
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.strip()
            if match := re.match(r"^\[\[?\s*([^\]\s]+)\s*\]\]?", stripped):
                table = match.group(1)
                self._positions.setdefault(("", table), number)
            elif match := re.match(r'^["\']?([A-Za-z0-9_.-]+)["\']?\s*=', stripped):
                self._positions.setdefault((table, match.group(1)), number)

    def where(self, table: str, key: str) -> str:
        number = self._positions.get((table, key))
        place = f"{self.label}:{number}" if number else self.label
        return f"{place} [{table}] {key}" if table else f"{place} {key}"


def _unknown_keys(
    kinds: Iterable[type[Section]], document: dict[str, Any], lines: _Lines
) -> list[ConfigProblem]:
    kinds = list(kinds)
    known = {kind.table: kind for kind in kinds if kind.table}
    # several sections may share the top level (``app``, ``[[profiles]]``, ``[[mcp]]``...)
    top = {name: None for kind in kinds if not kind.table for name in kind.model_fields}
    problems = []
    for key, value in document.items():
        if isinstance(value, dict) and key in known:
            fields = known[key].model_fields
            for inner in value:
                if inner not in fields and inner not in known[key].renamed:
                    problems.append(_unknown(lines.where(key, inner), inner, fields))
        elif key not in top:  # every section of the top level may name its keys there
            choices = {**top, **dict.fromkeys(known)}
            problems.append(_unknown(lines.where("", key), key, choices))
    return problems


def _unknown(where: str, key: str, choices: Iterable[str]) -> ConfigProblem:
    close = difflib.get_close_matches(key, list(choices), n=1)
    fix = f"did you mean {close[0]!r}?" if close else "remove it, or check the spelling"
    return ConfigProblem(where, f"unknown setting {key!r}", fix)


# -- validating ---------------------------------------------------------------------------


def _validate(
    kind: type[S], sources: Sequence[_Source], *, partial: bool = False
) -> tuple[S | None, dict[str, str], list[ConfigProblem]]:
    merged: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for source in reversed(sources):  # lowest priority first; later ones overwrite
        for name, (value, where) in source.values.items():
            merged[name], origins[name] = value, where
    try:
        # the sources are read already: validate exactly what they gave, nothing else
        section = (kind.partial_kind() if partial else kind).model_validate(merged)
    except ValidationError as error:
        return None, origins, [_problem(kind, item, origins) for item in error.errors()]
    return section, origins, []


def _problem(kind: type[Section], item: Any, origins: Mapping[str, str]) -> ConfigProblem:
    location = [str(part) for part in item.get("loc", ())]
    name = location[0] if location else ""
    key = f"[{kind.table}] {name}" if kind.table else name or "config"
    where = origins.get(name, key)
    if name and name not in where:  # an environment variable: say which setting it is
        where = f"{where} ({key})"
    message = str(item.get("msg", "invalid value"))
    inner = [f"#{int(part) + 1}" if part.isdigit() else part for part in location[1:]]
    if inner:  # inside a list of tables ([[profiles]], [[mcp]]): which one, which key
        message = f"{' '.join(inner)}: {message}"
    variables = _variables(kind, name) if name in kind.model_fields else []
    fix = f"set it in {CONFIG_FILE} or with {' / '.join(variables)}" if variables else ""
    if item.get("type") == "missing":
        return ConfigProblem(where, "required but not set", fix)
    return ConfigProblem(where, message, fix)


def read_file(path: Path | None) -> tuple[dict[str, Any], _Lines, list[ConfigProblem]]:
    """The parsed file (empty when there is none) and where its keys stand."""
    if path is None or not path.exists():
        return {}, _Lines(path, ""), []
    text = path.read_text(encoding="utf-8")
    try:
        return tomllib.loads(text), _Lines(path, text), []
    except tomllib.TOMLDecodeError as error:
        return {}, _Lines(path, text), [ConfigProblem(path.name, f"not valid TOML: {error}")]


def mentioned(kind: type[Section], *, file: Path | None, dotenv: Path | None = None) -> bool:
    """Whether anything sets ``kind``: its table in the file, or one of its variables in
    the environment or ``.env`` (a channel nobody configured is not an error)."""
    document, _, _ = read_file(file)
    if kind.table and isinstance(document.get(kind.table), dict) and document[kind.table]:
        return True
    variables = [v for name in kind.model_fields for v in _variables(kind, name)]
    found = dotenv_values(dotenv) if dotenv is not None and dotenv.exists() else {}
    return any(os.environ.get(v) or found.get(v) for v in variables)


def load_sections(
    kinds: Sequence[type[Section]],
    *,
    file: Path | None,
    dotenv: Path | None = None,
    overrides: Mapping[type[Section], Mapping[str, Any]] | None = None,
    known: Sequence[type[Section]] = (),
    partial: bool = False,
) -> Loaded:
    """Read and validate ``kinds`` from ``overrides`` (command-line options), the
    environment, ``dotenv`` and ``file``, in that order of priority; raise ``ConfigError``
    listing every problem at once. The file may also hold the tables of ``known`` sections
    (another command's), which are not validated here. ``partial`` leaves out what a
    section lacks as a whole (``Section.problems``: the caller asks for them)."""
    document, lines, problems = read_file(file)
    if problems:  # a file that does not parse: say so before anything it would hide
        raise ConfigError(problems)
    problems += _unknown_keys([*kinds, *known], document, lines)
    sections: dict[type[Section], Section] = {}
    origins: dict[tuple[str, str], str] = {}
    for kind in kinds:
        given = (overrides or {}).get(kind, {})
        sources = _sources(kind, file, dotenv, lines, document, given)
        section, found, section_problems = _validate(kind, sources, partial=partial)
        problems += section_problems
        origins.update({(kind.table, name): where for name, where in found.items()})
        if section is not None:
            sections[kind] = section
    if problems:
        raise ConfigError(problems)
    return Loaded(sections, origins, file if file is not None and file.exists() else None)
