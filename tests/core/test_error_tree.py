"""One error tree (issue 23): every exception class Threadline defines is a
``ThreadlineError``, so the bots and the agent reason about one hierarchy."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

from agent_core.errors import ThreadlineError

PACKAGES = ("agent_core", "adapters", "bots")


def defined_exceptions(package: str) -> list[type[BaseException]]:
    """The exception classes defined (not imported) in every module of ``package``."""
    found: list[type[BaseException]] = []
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        module = importlib.import_module(info.name)
        found += [
            value
            for value in vars(module).values()
            if inspect.isclass(value)
            and issubclass(value, BaseException)
            and value.__module__ == module.__name__
        ]
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_every_exception_threadline_defines_is_a_threadline_error(package: str) -> None:
    """Regression (issue 23): ``FrameError`` and ``SignatureError`` (agent_core.llm) were
    bare ``ValueError`` subclasses, outside the tree."""
    found = defined_exceptions(package)
    assert found, package
    outside = [
        f"{e.__module__}.{e.__qualname__}" for e in found if not issubclass(e, ThreadlineError)
    ]
    assert outside == []
