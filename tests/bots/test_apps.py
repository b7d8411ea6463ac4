"""``--app MODULE:ATTR``: every way a user's target can fail names the problem."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from agent_core import Agent
from bots.apps import AppError, load_agent

AGENT_MODULE = """
from agent_core import (Agent, InMemoryAgentMemory, ScriptedLlmService, StaticUserResolver,
                        ToolRegistry, User)

def make(runtime=None):
    return Agent(llm_service=ScriptedLlmService(["hi"]), tool_registry=ToolRegistry(),
                 user_resolver=StaticUserResolver(User(id="u")),
                 agent_memory=InMemoryAgentMemory())

agent = make()
seen = []

def with_runtime(runtime):
    seen.append(runtime)
    return make()

def broken():
    raise RuntimeError("no database configured")

def two(a, b):
    return make()

async def coroutine():
    return make()

not_an_agent = 42
"""


@pytest.fixture
def app_file(tmp_path: Path) -> Path:
    path = tmp_path / "mybot.py"
    path.write_text(textwrap.dedent(AGENT_MODULE), encoding="utf-8")
    return path


def test_an_agent_a_factory_and_a_factory_of_the_runtime(app_file: Path) -> None:
    runtime = object()
    assert isinstance(load_agent(f"{app_file}:agent", runtime), Agent)
    assert isinstance(load_agent(f"{app_file}:make", runtime), Agent)
    assert isinstance(load_agent(f"{app_file}:with_runtime", runtime), Agent)


@pytest.mark.parametrize(
    ("attribute", "message"),
    [
        ("missing", "has no attribute 'missing' (it has: "),
        ("not_an_agent", "expected an Agent or a function returning one, got int"),
        ("broken", "the factory raised RuntimeError: no database configured"),
        ("two", "the factory takes 2 arguments"),
        ("coroutine", "must be a plain function, not async"),
    ],
)
def test_each_wrong_target_says_what_is_wrong(app_file: Path, attribute: str, message: str) -> None:
    with pytest.raises(AppError, match=re.escape(message)):
        load_agent(f"{app_file}:{attribute}", object())


def test_the_factory_traceback_is_in_the_error(app_file: Path) -> None:
    with pytest.raises(AppError) as raised:
        load_agent(f"{app_file}:broken", object())
    assert 'mybot.py", line 18, in broken' in str(raised.value)


def test_module_not_found_syntax_error_and_bad_spec(tmp_path: Path) -> None:
    with pytest.raises(AppError, match="module 'no_such_module_xyz' not found"):
        load_agent("no_such_module_xyz:agent", object())
    with pytest.raises(AppError, match="no file"):
        load_agent(f"{tmp_path}/absent.py:agent", object())
    bad = tmp_path / "bad.py"
    bad.write_text("def oops(:\n    pass\n", encoding="utf-8")
    with pytest.raises(AppError, match=r"syntax error in .*bad.py:1"):
        load_agent(f"{bad}:agent", object())
    with pytest.raises(AppError, match="expected MODULE:ATTR"):
        load_agent("just_a_module", object())
