"""The image without a container runtime: the Dockerfile's steps, run here.

``build_image(root)`` reads the Dockerfile with BuildKit's parser and carries out its
instructions with ``root`` standing for the image's ``/``: the build context (what
``.dockerignore`` leaves) is copied where ``COPY`` puts it, every ``RUN`` of the build stage
runs under ``sh -c`` in its ``WORKDIR`` with its ``ARG`` and ``ENV`` values (as Docker runs
it), and the runtime stage's ``ENV``, ``WORKDIR``, ``ENTRYPOINT``, ``CMD`` and ``HEALTHCHECK``
become what ``Built`` runs commands with. An absolute path in a value is moved under
``root``; the base image's ``python`` is this interpreter (CPython 3.11, as the base's).

What it cannot do: the runtime stage's ``RUN`` (it creates the user, as root) is not run
(its data directory is created); nothing runs as another user or with a read-only root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import dockerfile

from tests.deploy.files import ROOT, build_context, stages


@dataclass
class Built:
    """The image's runtime stage, laid out under ``root``."""

    root: Path
    env: dict[str, str]
    workdir: Path
    entrypoint: list[str]
    cmd: list[str]
    healthcheck: list[str]
    volumes: list[Path] = field(default_factory=list)

    def command(self, *argv: str) -> list[str]:
        """What ``docker run IMAGE ARGV...`` runs (the image's CMD without ARGV)."""
        return [*self.entrypoint, *(argv or self.cmd)]

    def run(
        self, *argv: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(*argv),
            cwd=self.workdir,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def _inside(root: Path, value: str) -> str:
    """``value`` with each absolute path (``:``-separated) moved under ``root``."""
    return ":".join(str(root) + part if part.startswith("/") else part for part in value.split(":"))


def _expand(value: str, known: dict[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` as Docker expands them in ENV, ARG and WORKDIR values."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: known.get(m.group(1) or m.group(2), ""), value)


def _base(root: Path) -> dict[str, str]:
    """The base image's environment: its ``python`` first on PATH (this CPython 3.11), and
    this machine's package-index settings (a mirror, as a build machine may have)."""
    local_bin = root / "usr/local/bin"
    local_bin.mkdir(parents=True, exist_ok=True)
    python = local_bin / "python"
    if not python.exists():
        python.symlink_to(sys._base_executable)  # type: ignore[attr-defined]
    kept = {k: v for k, v in os.environ.items() if k.startswith(("PIP_", "HOME", "LANG"))}
    return {**kept, "PATH": f"{local_bin}:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"}


def _copy(root: Path, context: Path, workdir: Path, value: tuple[str, ...]) -> None:
    *sources, target = value
    destination = Path(_inside(root, target)) if target.startswith("/") else workdir / target
    for source in sources:
        origin = context / source
        if origin.is_dir():
            shutil.copytree(
                origin,
                destination if not target.endswith("/") else destination / source,
                dirs_exist_ok=True,
            )
        else:
            into = destination / origin.name if target.endswith("/") else destination
            into.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, into)


class _Carry:
    """One stage carried out under ``root``: its values so far, its WORKDIR, what it makes."""

    def __init__(self, root: Path, context: Path, base: dict[str, str], extras: str | None):
        self.root, self.context, self.extras = root, context, extras
        self.known, self.workdir = dict(base), root
        self.built = Built(root, {}, root, [], [], [])

    def arg(self, values: tuple[str, ...]) -> None:
        for item in values:
            name, _, default = item.partition("=")
            given = self.extras if name == "THREADLINE_EXTRAS" else None
            self.known[name] = given or default

    def env(self, values: tuple[str, ...]) -> None:
        for name, value in zip(values[::2], values[1::2], strict=True):
            self.known[name] = self.built.env[name] = _inside(self.root, _expand(value, self.known))

    def workdir_(self, values: tuple[str, ...]) -> None:
        self.workdir = Path(_inside(self.root, _expand(values[0], self.known)))
        self.workdir.mkdir(parents=True, exist_ok=True)

    def run(self, values: tuple[str, ...]) -> None:
        command = ["sh", "-c", values[0]]
        subprocess.run(command, cwd=self.workdir, env=self.known, check=True, timeout=900)

    def apply(self, command: dockerfile.Command, *, runtime: bool) -> None:
        built = self.built
        match command.cmd:
            case "ARG":
                self.arg(command.value)
            case "ENV":
                self.env(command.value)
            case "WORKDIR":
                self.workdir_(command.value)
            case "COPY" if command.flags:  # --from=build: the same path, under the same root
                assert command.value[0] == command.value[1], command.original
            case "COPY":
                _copy(self.root, self.context, self.workdir, command.value)
            case "RUN" if not runtime:
                self.run(command.value)
            case "VOLUME":
                built.volumes = [Path(_inside(self.root, v)) for v in command.value]
            case "ENTRYPOINT":
                built.entrypoint = list(command.value)
            case "CMD":
                built.cmd = list(command.value)
            case "HEALTHCHECK":
                built.healthcheck = [_inside(self.root, part) for part in command.value[1:]]


def build_image(root: Path, *, extras: str | None = None) -> Built:
    """Carry out the Dockerfile under ``root`` (see the module docstring)."""
    context = root.parent / f"{root.name}-context"
    for path in build_context():
        (context / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, context / path)
    base = _base(root)
    image = stages()
    for stage in image:
        carry = _Carry(root, context, base, extras)
        for command in stage.commands:
            carry.apply(command, runtime=stage is image[-1])
    built = carry.built
    built.workdir = carry.workdir
    built.env = {**base, **built.env}
    for volume in built.volumes:
        volume.mkdir(parents=True, exist_ok=True)
    return built
