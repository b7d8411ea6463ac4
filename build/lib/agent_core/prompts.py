"""System prompts: ``SystemPromptBuilder`` and the default one."""

from __future__ import annotations

import datetime as dt

from agent_core.tools.base import ToolSchema
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

    >>> import asyncio
    >>> prompt = asyncio.run(DefaultSystemPromptBuilder("Be brief.").build_system_prompt(
    ...     User(id="u"), []))
    >>> prompt.startswith("Be brief.")
    True
    """

    def __init__(self, base_prompt: str | None = None) -> None:
        self.base_prompt = base_prompt or DEFAULT_BASE_PROMPT

    async def build_system_prompt(self, user: User, tools: list[ToolSchema]) -> str | None:
        parts = [self.base_prompt, f"Today is {dt.date.today().isoformat()}."]
        if user.username:
            parts.append(f"You are talking to {user.username}.")
        if tools:
            listing = "\n".join(f"- `{t.name}`: {t.description}" for t in tools)
            parts.append(f"Tools you can use:\n{listing}")
        return "\n\n".join(parts)
