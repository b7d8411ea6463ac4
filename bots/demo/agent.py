"""The ready-to-run agent every channel uses: SQL and chart tools, memory, and Claude when
``ANTHROPIC_API_KEY`` is set (the scripted demo model otherwise), over a sample shop database,
or over your own database when ``THREADLINE_DATABASE_URL`` names one (``bots.database_agent``).

>>> import tempfile
>>> agent = build_demo_agent(DemoSettings(data_dir=tempfile.mkdtemp(), use_scripted_model=True))
>>> agent.llm_service.model_name
'threadline-demo (scripted, no API key)'
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from agent_core.agent import Agent
from agent_core.approvals.policy import ASKER, ToolApproval
from agent_core.config import AgentConfig
from agent_core.conversations import ConversationStore, MemoryConversationStore
from agent_core.database.runner import SqlAlchemyRunner
from agent_core.database.settings import DatabaseConfig
from agent_core.extensions.enhancer import LlmContextEnhancer
from agent_core.extensions.recovery import BackoffRecoveryStrategy
from agent_core.llm.base import LlmService
from agent_core.memory.base import AgentMemory
from agent_core.memory.in_memory import InMemoryAgentMemory
from agent_core.prompts import DefaultSystemPromptBuilder
from agent_core.state_factory import default_data_dir
from agent_core.tools.memory_tools import (
    SaveQuestionToolArgsTool,
    SaveTextMemoryTool,
    SearchSavedCorrectToolUsesTool,
)
from agent_core.tools.registry import ToolRegistry
from agent_core.tools.sql import RunSqlTool, SqlRunner
from agent_core.tools.visualize import VisualizeDataTool
from agent_core.users import RequestContext, User, UserResolver
from agent_core.workflow import DefaultWorkflowHandler
from bots.demo.data import SCHEMA, ensure_demo_database
from bots.demo.model import DEMO_QUESTIONS, DemoLlmService
from bots.demo.refunds import RefundOrderTool

QUERY_GROUPS = ["user", "admin"]
ADMIN_GROUPS = ["admin"]

DEMO_PROMPT = """You are Threadline, a data assistant in a chat thread (Slack or Microsoft \
Teams). You answer questions about a small online shop's SQLite database.

Use `run_sql` for every question that needs data; never invent numbers. `refund_order` \
refunds one order when someone asks for exactly that (it waits for a person's approval). \
Revenue is SUM(order_items.quantity * order_items.unit_price) over orders whose status is not \
'cancelled'. Dates are ISO text; use strftime('%Y-%m', order_date) for months and \
date('now', ...) for relative periods. When a chart makes the answer clearer (trends, \
comparisons across categories), also call `visualize_data` with the SQL that produces the \
chart's data (labels first, then numbers). Before writing a query for a question like one \
answered before, `search_saved_correct_tool_uses` can give you SQL that worked.

Answer in short markdown: the key numbers first, then a sentence of interpretation.

Database schema:
{schema}"""


class DemoSettings(BaseModel):
    """How the built-in agent is built (the commands fill it from the configuration:
    ``bots.serving.builtin_agent``); it reads no environment itself.

    Stores and the user resolver can be passed in (a bot with Redis, a channel with its own
    identity); otherwise in-memory stores and ``DemoUserResolver`` are used.

    >>> DemoSettings(admin_user_ids=["U1"]).default_groups
    ['user']
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    data_dir: Path = Field(default_factory=default_data_dir)
    """Where the sample shop (and your database's schema cache) live."""
    anthropic_api_key: SecretStr | None = None
    anthropic_model: str | None = None
    anthropic_base_url: str | None = None
    llm_service: LlmService | None = None
    """The model, built already (``[llm] provider``: Bedrock, Vertex, Foundry...); it wins
    over the ``anthropic_*`` settings."""
    use_scripted_model: bool = False
    """Use the scripted demo model even when an API key is set."""
    seed: int = 2024
    max_rows: int = Field(default=100, gt=0)
    sql_timeout: float = Field(default=10.0, gt=0)
    stream_delay: float = Field(default=0.0, ge=0)
    """Seconds between the scripted model's text chunks, so a demo visibly streams."""
    default_groups: list[str] = Field(default_factory=lambda: ["user"])
    admin_user_ids: list[str] = Field(default_factory=list)
    """Platform user ids (``U123``) or full user ids (``slack:T1:U123``) made admins."""
    database_url: SecretStr | None = None
    """A SQLAlchemy URL of your database; the demo shop when unset. Secret, because URLs
    carry passwords."""
    training_dir: Path | None = None
    """A folder of documentation (``*.md``) and question -> SQL examples (``*.sql``) about
    your database."""
    schema_max_tokens: int = Field(default=8000, gt=0)
    """The most schema text (in tokens) a turn's prompt gets about your database."""
    database: DatabaseConfig | None = None
    """Your database in full (``[database]`` or a profile's): URL, roles and URLs per group,
    read-only rules; wins over ``database_url`` and the two settings after it."""
    database_name: str = "default"
    """Which configured database ``database`` is (``default``, or a profile's name)."""

    def database_config(self) -> DatabaseConfig | None:
        """The database to answer from (None: the demo shop)."""
        if self.database is not None and self.database.url:
            return self.database
        if self.database_url is None:
            return None
        return DatabaseConfig(
            url=self.database_url.get_secret_value(),
            training_dir=self.training_dir,
            schema_max_tokens=self.schema_max_tokens,
        )

    agent_config: AgentConfig | None = None
    conversation_store: ConversationStore | None = None
    agent_memory: AgentMemory | None = None
    user_resolver: UserResolver | None = None

    @property
    def uses_claude(self) -> bool:
        if self.use_scripted_model:
            return False
        return self.anthropic_api_key is not None or self.llm_service is not None


class DemoUserResolver(UserResolver):
    """Users from the channel metadata adapters fill from signed payloads; groups from the
    settings (``default_groups``, plus ``admin`` for ``admin_user_ids``).

    >>> import asyncio
    >>> resolver = DemoUserResolver(DemoSettings(admin_user_ids=["U1"]))
    >>> ctx = RequestContext(metadata={"platform": "slack", "workspace_id": "T1", "user_id": "U1"})
    >>> asyncio.run(resolver.resolve_user(ctx)).group_memberships
    ['user', 'admin']
    """

    def __init__(self, settings: DemoSettings) -> None:
        self.default_groups = list(settings.default_groups)
        self.admin_ids = frozenset(settings.admin_user_ids)

    async def resolve_user(self, request_context: RequestContext) -> User:
        meta = request_context.metadata
        platform_id = str(meta.get("user_id") or "demo-user")
        workspace = str(meta.get("workspace_id") or "local")
        user_id = f"{meta.get('platform') or 'demo'}:{workspace}:{platform_id}"
        groups = list(self.default_groups)
        if {platform_id, user_id} & self.admin_ids and "admin" not in groups:
            groups.append("admin")
        return User(
            id=user_id,
            username=meta.get("user_name"),
            metadata={"workspace_id": workspace},
            group_memberships=groups,
        )


def build_llm_service(settings: DemoSettings) -> LlmService:
    """Claude when a key is configured, else the scripted demo model."""
    if settings.uses_claude and settings.llm_service is not None:
        return settings.llm_service
    if settings.uses_claude and settings.anthropic_api_key is not None:
        from agent_core.llm.anthropic import AnthropicLlmService

        return AnthropicLlmService(
            model=settings.anthropic_model,
            api_key=settings.anthropic_api_key.get_secret_value(),
            base_url=settings.anthropic_base_url,
        )
    return DemoLlmService(chunk_delay=settings.stream_delay)


def build_demo_registry(runner: SqlRunner, settings: DemoSettings) -> ToolRegistry:
    """``run_sql``, ``visualize_data`` and memory search for users; memory saving for admins."""
    registry = ToolRegistry()
    timeout = settings.sql_timeout
    registry.register_local_tool(
        RunSqlTool(runner, max_rows=settings.max_rows, timeout=timeout), QUERY_GROUPS
    )
    registry.register_local_tool(VisualizeDataTool(runner, timeout=timeout), QUERY_GROUPS)
    registry.register_local_tool(SearchSavedCorrectToolUsesTool(), QUERY_GROUPS)
    registry.register_local_tool(SaveQuestionToolArgsTool(), ADMIN_GROUPS)
    registry.register_local_tool(SaveTextMemoryTool(), ADMIN_GROUPS)
    return registry


def build_demo_agent(settings: DemoSettings | None = None) -> Agent:
    """The built-in agent: over your database when ``settings`` names one, else over the
    sample shop (created in ``settings.data_dir`` on first use)."""
    settings = settings or DemoSettings()
    memory = settings.agent_memory or InMemoryAgentMemory()
    database = settings.database_config()
    if database is not None:
        return _database_agent(settings, database, memory)
    shop = ensure_demo_database(settings.data_dir, seed=settings.seed)
    runner = SqlAlchemyRunner.sqlite(shop)
    welcome = (
        "Hi! I answer questions about a sample online shop (customers, products, orders "
        "over two years) with real SQL queries and charts. Type `/help` for commands."
        + ("" if settings.uses_claude else "\n\n" + _scripted_note())
    )
    agent = _agent(
        settings,
        memory,
        runner,
        prompt=DEMO_PROMPT.format(schema=SCHEMA),  # the small shop: its whole schema
        workflow=DefaultWorkflowHandler(
            welcome, suggestions=[q.examples[0] for q in DEMO_QUESTIONS[:4]]
        ),
    )
    # the one tool that changes things (its own ledger; the shop's numbers never change):
    # the asker or an admin approves it, unless the configuration says otherwise
    agent.tool_registry.register_local_tool(RefundOrderTool(shop), QUERY_GROUPS)
    own = agent.config.approvals
    refund = ToolApproval(approvers=[ASKER, "admin"])
    approvals = own.model_copy(update={"tools": {"refund_order": refund, **own.tools}})
    agent.config = agent.config.model_copy(update={"approvals": approvals})
    return agent


def _database_agent(settings: DemoSettings, database: DatabaseConfig, memory: AgentMemory) -> Agent:
    from bots.database_agent import build_database_parts

    parts = build_database_parts(
        database, data_dir=settings.data_dir, memory=memory, name=settings.database_name
    )
    resolver = settings.user_resolver or DemoUserResolver(settings)
    agent = _agent(
        settings.model_copy(update={"user_resolver": parts.resolver(resolver)}),
        memory,
        parts.access,
        prompt=parts.prompt,
        enhancer=parts.enhancer,
        workflow=DefaultWorkflowHandler(
            parts.welcome(uses_claude=settings.uses_claude), status=[parts.access.mapping_lines]
        ),
    )
    agent.lifecycle_hooks.extend(parts.hooks())
    return agent


def _agent(
    settings: DemoSettings,
    memory: AgentMemory,
    runner: SqlRunner,
    *,
    prompt: str,
    workflow: DefaultWorkflowHandler,
    enhancer: LlmContextEnhancer | None = None,
) -> Agent:
    return Agent(
        llm_service=build_llm_service(settings),
        tool_registry=build_demo_registry(runner, settings),
        user_resolver=settings.user_resolver or DemoUserResolver(settings),
        agent_memory=memory,
        conversation_store=settings.conversation_store or MemoryConversationStore(),
        config=settings.agent_config,
        system_prompt_builder=DefaultSystemPromptBuilder(prompt),
        workflow_handler=workflow,
        error_recovery_strategy=BackoffRecoveryStrategy(),
        llm_context_enhancer=enhancer,
    )


def _scripted_note() -> str:
    return (
        "_No `ANTHROPIC_API_KEY` is set, so a scripted demo model answers a fixed set of "
        "questions (ask `help`)._"
    )
