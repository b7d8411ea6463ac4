"""Finding the user's agent: ``--app MODULE:ATTR``, the way uvicorn and gunicorn take an app.

``MODULE`` is a dotted module (``mycompany.bot``) or a file (``path/to/agent.py``, imported
with its folder on ``sys.path`` so its own imports work); ``ATTR`` names an ``Agent`` or a
callable that returns one, called with no argument or with the channel's ``Runtime``::

    agent = Agent(...)                     # --app mybot:agent
    def build(runtime: Runtime) -> Agent:  # --app mybot:build
        return Agent(..., conversation_store=runtime.conversation_store)

Every failure is an ``AppError`` whose message names the problem (module not found, syntax
error, attribute missing, not an Agent, factory raised: with its traceback).

>>> import_target("agent_core:Agent").__name__
'Agent'
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import traceback
from pathlib import Path
from typing import Any

from agent_core.agent import Agent
from agent_core.errors import ThreadlineError


class AppError(ThreadlineError):
    """The ``--app`` target could not give an agent; the message says why."""


def split_target(target: str) -> tuple[str, str]:
    """``"pkg.mod:attr"`` -> ``("pkg.mod", "attr")``; a Windows drive colon is not a separator.

    >>> split_target("examples/weather.py:agent")
    ('examples/weather.py', 'agent')
    """
    module, sep, attribute = target.strip().rpartition(":")
    if not sep or not module or not attribute or not attribute.isidentifier():
        raise AppError(
            f"--app {target!r}: expected MODULE:ATTR, e.g. 'examples/weather.py:agent' or "
            "'mycompany.bot:build_agent'"
        )
    return module, attribute


def _import_file(path: Path) -> Any:
    if not path.is_file():
        raise AppError(f"--app: no file {path}")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # its sibling modules import as they would when run
    name = f"threadline_app_{path.stem}"
    loaded = sys.modules.get(name)
    if loaded is not None and Path(getattr(loaded, "__file__", "")) == path.resolve():
        return loaded  # imported once per process, as any module is
    spec = importlib.util.spec_from_file_location(name, path.resolve())
    if spec is None or spec.loader is None:
        raise AppError(f"--app: cannot import {path} (not a Python file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _import(module_name: str) -> Any:
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
        return _import_file(Path(module_name))
    if str(Path.cwd()) not in sys.path and "" not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name):
            raise AppError(
                f"--app: module {module_name!r} not found (run from the folder that holds it, "
                "or give a file path such as 'path/to/agent.py:agent')"
            ) from None
        raise


def import_target(target: str) -> Any:
    """The object ``target`` names; ``AppError`` says what went wrong."""
    module_name, attribute = split_target(target)
    try:
        module = _import(module_name)
    except AppError:
        raise
    except SyntaxError as error:
        where = f"{error.filename}:{error.lineno}" if error.filename else module_name
        raise AppError(f"--app: syntax error in {where}: {error.msg}") from None
    except Exception as error:
        raise AppError(
            f"--app: importing {module_name!r} raised {type(error).__name__}: {error}\n"
            + "".join(traceback.format_exception(error))
        ) from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        public = sorted(name for name in vars(module) if not name.startswith("_"))
        raise AppError(
            f"--app: {module_name!r} has no attribute {attribute!r} "
            f"(it has: {', '.join(public[:12]) or 'nothing public'})"
        ) from None


def _call(factory: Any, runtime: object, target: str) -> Any:
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        parameters = []  # a builtin or C callable: try it without arguments
    required = [
        p
        for p in parameters
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(required) > 1:
        raise AppError(
            f"--app {target}: the factory takes {len(required)} arguments; it may take none, "
            "or one (the Runtime)"
        )
    try:
        return factory(runtime) if required else factory()
    except Exception as error:
        raise AppError(
            f"--app {target}: the factory raised {type(error).__name__}: {error}\n"
            + "".join(traceback.format_exception(error))
        ) from None


def load_agent(target: str, runtime: object) -> Agent:
    """The ``Agent`` that ``target`` names, or builds (given ``runtime`` when it asks)."""
    found = import_target(target)
    if isinstance(found, Agent):
        return found
    if inspect.isclass(found) or not callable(found):
        raise AppError(
            f"--app {target}: expected an Agent or a function returning one, got "
            f"{type(found).__name__}"
        )
    built = _call(found, runtime, target)
    if inspect.isawaitable(built):
        if inspect.iscoroutine(built):
            built.close()
        raise AppError(f"--app {target}: the factory must be a plain function, not async")
    if not isinstance(built, Agent):
        raise AppError(f"--app {target}: the factory returned {type(built).__name__}, not an Agent")
    return built
