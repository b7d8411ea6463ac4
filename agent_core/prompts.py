"""System prompts: ``SystemPromptBuilder`` and the default one."""

from __future__ import annotations

import datetime as dt

from agent_core.clock import SYSTEM_CLOCK, Clock, utcnow
from agent_core.tool_contract import ToolSchema
from agent_core.users import User

DEFAULT_BASE_PROMPT = (
    "You are Threadline, a helpful data assistant that people talk to in chat threads "
    "(Slack, Microsoft Teams). Answer concisely in GitHub-flavoured markdown; prefer short "
    "paragraphs, bullet lists and small tables. When a question needs data, use the tools "
    "rather than guessing, then explain what the results show in plain language. Never "
    "invent numbers."
)


class SystemPromptBuilder:
    """Builds the system prompt for a user and the tools they may use; ``None`` means none."""

    async def build_system_prompt(self, user: User, tools: list[ToolSchema]) -> str | None:
        raise NotImplementedError


class ExtendedSystemPromptBuilder(SystemPromptBuilder):
    """Another builder's prompt with more instructions after it (a profile's, say).

    >>> import asyncio
    >>> builder = ExtendedSystemPromptBuilder(DefaultSystemPromptBuilder("Be brief."),
    ...                                       "Amounts are in EUR.")
    >>> asyncio.run(builder.build_system_prompt(User(id="u"), [])).endswith("Amounts are in EUR.")
    True
    """

    def __init__(self, base: SystemPromptBuilder, instructions: str) -> None:
        self.base = base
        self.instructions = instructions

    async def build_system_prompt(self, user: User, tools: list[ToolSchema]) -> str | None:
        prompt = await self.base.build_system_prompt(user, tools)
        return f"{prompt}\n\n{self.instructions}" if prompt else self.instructions


class DefaultSystemPromptBuilder(SystemPromptBuilder):
    """The base prompt, today's date, and the user's tools.

    The prompt of a (date, user name, tool set) is built once and reused: it is asked for
    on every turn, and the same text also keeps the model's prompt cache warm.

    >>> import asyncio
    >>> prompt = asyncio.run(DefaultSystemPromptBuilder("Be brief.").build_system_prompt(
    ...     User(id="u"), []))
    >>> prompt.startswith("Be brief.")
    True
    """

    def __init__(
        self, base_prompt: str | None = None, *, keep: int = 256, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.base_prompt = base_prompt or DEFAULT_BASE_PROMPT
        self._keep = keep
        self._today = _Today(clock)
        self._built: dict[tuple[str, str | None, tuple[tuple[str, str], ...]], str] = {}

    async def build_system_prompt(self, user: User, tools: list[ToolSchema]) -> str | None:
        key = (self._today(), user.username, tuple((t.name, t.description) for t in tools))
        prompt = self._built.get(key)
        if prompt is None:
            if len(self._built) >= self._keep:
                self._built.clear()
            prompt = self._built[key] = self._build(*key)
        return prompt

    def _build(self, today: str, username: str | None, tools: tuple[tuple[str, str], ...]) -> str:
        parts = [self.base_prompt, f"Today is {today}."]
        if username:
            parts.append(f"You are talking to {username}.")
        if tools:
            listing = "\n".join(f"- `{name}`: {description}" for name, description in tools)
            parts.append(f"Tools you can use:\n{listing}")
        return "\n\n".join(parts)


class _Today:
    """The clock's date (UTC), ISO; worked out again once a day (at the next UTC midnight),
    not on every turn."""

    __slots__ = ("clock", "iso", "until")

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.until, self.iso = 0.0, ""

    def __call__(self) -> str:
        if self.clock.now() >= self.until:
            today = utcnow(self.clock).date()
            midnight = dt.datetime.combine(today + dt.timedelta(days=1), dt.time(), dt.UTC)
            self.until = midnight.timestamp()
            self.iso = today.isoformat()
        return self.iso
