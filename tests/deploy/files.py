"""What the deploy tests read: the Dockerfile (parsed by BuildKit's own parser, through the
``dockerfile`` package), the build context a ``.dockerignore`` leaves, the Kubernetes
manifests and the compose file, and the environment variables Threadline's settings read."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dockerfile
import yaml
from pydantic import AliasChoices

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBERNETES = DEPLOY / "kubernetes"
DOCKERFILE = ROOT / "Dockerfile"


@dataclass
class Stage:
    """One ``FROM`` of the Dockerfile and the instructions under it."""

    image: str
    name: str | None
    commands: list[dockerfile.Command] = field(default_factory=list)

    def all(self, instruction: str) -> list[dockerfile.Command]:
        return [c for c in self.commands if c.cmd == instruction.upper()]

    def one(self, instruction: str) -> dockerfile.Command:
        [found] = self.all(instruction)
        return found

    def env(self) -> dict[str, str]:
        """The ``ENV`` values this stage sets, as written (``$PATH`` unexpanded)."""
        values: dict[str, str] = {}
        for command in self.all("ENV"):
            pairs = command.value
            values |= dict(zip(pairs[::2], pairs[1::2], strict=True))
        return values

    def args(self) -> dict[str, str | None]:
        """The ``ARG`` names of this stage with their defaults."""
        declared: dict[str, str | None] = {}
        for command in self.all("ARG"):
            for item in command.value:
                name, equals, default = item.partition("=")
                declared[name] = default if equals else None
        return declared


def stages(path: Path = DOCKERFILE) -> list[Stage]:
    """The Dockerfile's stages, in order."""
    found: list[Stage] = []
    for command in dockerfile.parse_file(str(path)):
        if command.cmd == "FROM":
            image, *rest = command.value
            name = rest[1] if len(rest) == 2 and rest[0].upper() == "AS" else None
            found.append(Stage(image, name))
        elif found:
            found[-1].commands.append(command)
    return found


# -- the build context: Docker's .dockerignore rules ------------------------------------------


def _pattern(text: str) -> re.Pattern[str]:
    """A ``.dockerignore`` pattern as Docker reads it (Go's ``filepath.Match``, plus ``**``
    for any number of directories, zero included), compiled to a regular expression."""
    parts, i = [], 0
    while i < len(text):
        char = text[i]
        if text.startswith("**/", i):
            parts.append("(?:.*/)?")
            i += 3
            continue
        if text.startswith("**", i):
            parts.append(".*")
            i += 2
            continue
        if char == "*":
            parts.append("[^/]*")
        elif char == "?":
            parts.append("[^/]")
        elif char == "[":
            end = text.index("]", i)
            parts.append(text[i : end + 1])  # a class reads the same in Go and in Python
            i = end
        else:
            parts.append(re.escape(char))
        i += 1
    return re.compile("".join(parts) + r"\Z")


Rule = tuple[bool, re.Pattern[str]]


def ignore_rules(text: str) -> list[Rule]:
    """``(is_exception, pattern)`` per line of a ``.dockerignore``: comments and blank lines
    dropped, each pattern cleaned as Docker cleans it (``filepath.Clean``, no leading ``/``)."""
    rules = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        cleaned = os.path.normpath(line.removeprefix("!").strip()).lstrip("/")
        rules.append((exception, _pattern(cleaned)))
    return rules


def excluded(path: str, rules: list[Rule]) -> bool:
    """Whether Docker leaves ``path`` (relative, ``/``-separated) out of the context: the last
    rule matching the path or one of its parent directories decides."""
    parents = path.split("/")
    candidates = ["/".join(parents[: n + 1]) for n in range(len(parents))]
    out = False
    for exception, pattern in rules:
        if any(pattern.match(candidate) for candidate in candidates):
            out = not exception
    return out


def build_context(root: Path = ROOT) -> Iterator[str]:
    """Every file ``docker build root`` sends (the Dockerfile and ``.dockerignore`` always go)."""
    rules = ignore_rules((root / ".dockerignore").read_text())
    exceptions = [pattern.pattern for exception, pattern in rules if exception]
    for folder, folders, names in os.walk(root):
        relative = Path(folder).relative_to(root).as_posix()
        # a folder left out whole is not walked (.venv): unless an exception may reach inside
        folders[:] = [
            f
            for f in folders
            if not excluded(inside := f if relative == "." else f"{relative}/{f}", rules)
            or any(e.startswith((re.escape(inside), "(?:.*/)?", ".*")) for e in exceptions)
        ]
        for name in names:
            path = name if relative == "." else f"{relative}/{name}"
            if path in ("Dockerfile", ".dockerignore") or not excluded(path, rules):
                yield path


# -- manifests -----------------------------------------------------------------------------------


def manifests() -> list[tuple[Path, dict[str, Any]]]:
    """Every Kubernetes object under deploy/kubernetes, with its file (the kustomization and
    the example Secrets included)."""
    found = []
    for path in sorted(KUBERNETES.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document is not None:
                found.append((path, document))
    return found


def objects(kind: str) -> list[dict[str, Any]]:
    return [document for _, document in manifests() if document["kind"] == kind]


def by_name(kind: str, name: str) -> dict[str, Any]:
    [found] = [d for d in objects(kind) if d["metadata"]["name"] == name]
    return found


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


# -- the settings ------------------------------------------------------------------------------


def setting_variables() -> set[str]:
    """Every environment variable a Threadline setting is read from (the code's own list)."""
    from bots.serving import SHARED, channel_sections

    names: set[str] = set()
    for kind in (*SHARED, *channel_sections()):
        for info in kind.model_fields.values():
            if isinstance(info.validation_alias, AliasChoices):
                names |= {str(choice) for choice in info.validation_alias.choices[1:]}
    return names


def secret_variables() -> set[str]:
    """The environment variables of every secret setting (``SecretStr``), from the code."""
    from pydantic import SecretStr

    from bots.serving import SHARED, channel_sections

    names: set[str] = set()
    for kind in (*SHARED, *channel_sections()):
        for info in kind.model_fields.values():
            if SecretStr in getattr(info.annotation, "__args__", (info.annotation,)):
                names |= {str(c) for c in info.validation_alias.choices[1:]}
    return names
