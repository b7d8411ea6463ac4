"""The scripted demo model: runs the whole pipeline without an API key.

It is not an LLM. It recognises a documented set of questions about the sample shop
database (``DEMO_QUESTIONS``), answers each by *really* calling ``run_sql`` (and
``visualize_data`` where a chart helps) through the agent's tool loop, then writes a
markdown answer from the numbers the tools returned. Anything else gets a clear note of
what it can do. Every answer says it comes from the scripted demo model.
"""

from __future__ import annotations

import asyncio
import csv
import re
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_core.llm.base import LlmMessage, LlmRequest, LlmResponse, LlmService, LlmStreamChunk
from agent_core.llm.scripted import ScriptedResponse
from agent_core.memory.ranking import RelevanceIndex
from agent_core.tool_contract import ToolCall
from bots.demo import answers, files

LABEL = "_Scripted demo model (no `ANTHROPIC_API_KEY` set): canned questions, real queries._"

REVENUE = "ROUND(SUM(oi.quantity * oi.unit_price), 2)"
NOT_CANCELLED = "o.status != 'cancelled'"


@dataclass(frozen=True)
class DemoQuestion:
    """One question the demo model understands: how people ask it, the SQL, the chart, and
    how to turn the result rows into an answer."""

    key: str
    examples: tuple[str, ...]
    sql: str
    answer: Callable[[list[dict[str, str]], int], str]
    chart: dict[str, Any] | None = None
    """``visualize_data`` arguments besides the SQL (chart type, columns, title)."""


DEMO_QUESTIONS: tuple[DemoQuestion, ...] = (
    DemoQuestion(
        key="top_customers",
        examples=(
            "Who are our top customers by revenue?",
            "which customers brought in the most revenue",
            "best clients by sales",
        ),
        sql=(
            f"SELECT c.name AS customer, c.country, {REVENUE} AS revenue, "
            "COUNT(DISTINCT o.id) AS orders\n"
            "FROM customers c\nJOIN orders o ON o.customer_id = c.id\n"
            "JOIN order_items oi ON oi.order_id = o.id\n"
            f"WHERE {NOT_CANCELLED}\nGROUP BY c.id\nORDER BY revenue DESC\nLIMIT 10"
        ),
        answer=answers.top_customers,
        chart={
            "chart_type": "bar",
            "x": "customer",
            "y": ["revenue"],
            "title": "Top 10 customers by revenue",
        },
    ),
    DemoQuestion(
        key="monthly_revenue",
        examples=(
            "Show the monthly revenue trend",
            "revenue over time by month",
            "how are sales trending",
        ),
        sql=(
            f"SELECT strftime('%Y-%m', o.order_date) AS month, {REVENUE} AS revenue, "
            "COUNT(DISTINCT o.id) AS orders\n"
            "FROM orders o\nJOIN order_items oi ON oi.order_id = o.id\n"
            f"WHERE {NOT_CANCELLED}\nGROUP BY month\nORDER BY month"
        ),
        answer=answers.monthly_revenue,
        chart={"chart_type": "line", "x": "month", "y": ["revenue"], "title": "Monthly revenue"},
    ),
    DemoQuestion(
        key="sales_by_category",
        examples=(
            "Sales by category",
            "revenue per product category",
            "which categories sell best",
        ),
        sql=(
            f"SELECT p.category, {REVENUE} AS revenue, SUM(oi.quantity) AS units\n"
            "FROM order_items oi\nJOIN orders o ON o.id = oi.order_id\n"
            "JOIN products p ON p.id = oi.product_id\n"
            f"WHERE {NOT_CANCELLED}\nGROUP BY p.category\nORDER BY revenue DESC"
        ),
        answer=answers.sales_by_category,
        chart={
            "chart_type": "bar",
            "x": "category",
            "y": ["revenue"],
            "title": "Revenue by category",
        },
    ),
    DemoQuestion(
        key="orders_last_month",
        examples=(
            "How many orders did we get last month?",
            "number of orders placed last month",
            "order count for last month",
        ),
        sql=(
            "SELECT strftime('%Y-%m', date('now', 'start of month', '-1 month')) AS month,\n"
            "  SUM(order_date >= date('now', 'start of month', '-1 month')) AS orders,\n"
            "  SUM(order_date >= date('now', 'start of month', '-1 month')\n"
            "      AND status = 'cancelled') AS cancelled,\n"
            "  SUM(order_date < date('now', 'start of month', '-1 month')) AS previous_month\n"
            "FROM orders\n"
            "WHERE order_date >= date('now', 'start of month', '-2 months')\n"
            "  AND order_date < date('now', 'start of month')"
        ),
        answer=answers.orders_last_month,
    ),
    DemoQuestion(
        key="top_products",
        examples=(
            "What are our best-selling products?",
            "top products by units sold",
            "most popular items",
        ),
        sql=(
            f"SELECT p.name AS product, p.category, SUM(oi.quantity) AS units, "
            f"{REVENUE} AS revenue\n"
            "FROM order_items oi\nJOIN orders o ON o.id = oi.order_id\n"
            "JOIN products p ON p.id = oi.product_id\n"
            f"WHERE {NOT_CANCELLED}\nGROUP BY p.id\nORDER BY units DESC\nLIMIT 10"
        ),
        answer=answers.top_products,
        chart={
            "chart_type": "bar",
            "x": "product",
            "y": ["units"],
            "title": "Best-selling products (units)",
        },
    ),
    DemoQuestion(
        key="revenue_by_country",
        examples=(
            "Revenue by country",
            "sales per region",
            "which countries buy the most",
        ),
        sql=(
            f"SELECT c.country, {REVENUE} AS revenue, COUNT(DISTINCT c.id) AS customers\n"
            "FROM customers c\nJOIN orders o ON o.customer_id = c.id\n"
            "JOIN order_items oi ON oi.order_id = o.id\n"
            f"WHERE {NOT_CANCELLED}\nGROUP BY c.country\nORDER BY revenue DESC"
        ),
        answer=answers.revenue_by_country,
        chart={
            "chart_type": "bar",
            "x": "country",
            "y": ["revenue"],
            "title": "Revenue by country",
        },
    ),
)

HELP_WORDS = ("help", "what can you do", "what can i ask", "what do you know", "capabilities")


def help_text(*, understood: bool) -> str:
    """What the demo model can answer; ``understood=False`` when the question was not one."""
    lead = (
        "Here is what I can answer about the sample shop database:"
        if understood
        else "I can't answer that one: I am a scripted stand-in, not a language model. "
        "I can answer these questions about the sample shop database:"
    )
    listing = "\n".join(f"- _{q.examples[0]}_" for q in DEMO_QUESTIONS)
    listing += "\n- _Refund order 42_ (a tool that changes things: it waits for your approval)"
    return (
        f"{LABEL}\n\n{lead}\n{listing}\n\n"
        "Each one runs a real SQL query (`run_sql`) and, where it helps, draws a chart "
        "(`visualize_data`). Set `ANTHROPIC_API_KEY` to talk to Claude instead, which can "
        "answer any question about the data."
    )


class DemoQuestionMatcher:
    """Finds the demo question a message asks, with the memory's relevance ranking.

    >>> DemoQuestionMatcher().match("which clients spent the most?").key
    'top_customers'
    """

    def __init__(
        self, questions: Sequence[DemoQuestion] = DEMO_QUESTIONS, threshold: float = 0.4
    ) -> None:
        self.questions = {q.key: q for q in questions}
        self.threshold = threshold
        self._index = RelevanceIndex()
        for question in questions:
            for n, example in enumerate(question.examples):
                self._index.add((question.key, n), example)

    def match(self, message: str) -> DemoQuestion | None:
        hits = self._index.search(message, limit=1, threshold=self.threshold)
        if not hits:
            return None
        key, _ = hits[0]
        return self.questions[key[0]] if isinstance(key, tuple) else None


_TOP_N = re.compile(r"\b(?:top|best|first)\s+(\d{1,2})\b", re.IGNORECASE)


def _with_top_n(
    question: str, sql: str, chart: dict[str, Any] | None
) -> tuple[str, dict[str, Any] | None]:
    """Honour "top 5" in the question for the ranked questions (their SQL says LIMIT 10)."""
    found = _TOP_N.search(question)
    if not found or "LIMIT 10" not in sql or not 1 <= int(found[1]) <= 50:
        return sql, chart
    n = found[1]
    if chart is not None and "title" in chart:
        chart = {**chart, "title": str(chart["title"]).replace("10", n)}
    return sql.replace("LIMIT 10", f"LIMIT {n}"), chart


_REFUND = re.compile(r"\brefund\b.*?\border\s*#?(\d{1,9})\b", re.IGNORECASE)


def refund_asked(question: str) -> int | None:
    """The order a question asks to refund ("refund order 42"), if it asks that.

    >>> refund_asked("Please refund order #42, it arrived broken"), refund_asked("refunds?")
    (42, None)
    """
    found = _REFUND.search(question)
    return int(found[1]) if found else None


def _call(name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(id=f"demo_{uuid.uuid4().hex[:16]}", name=name, arguments=arguments)


def _is_help(message: str) -> bool:
    text = message.lower().strip(" ?!.")
    return not text or any(word in text for word in HELP_WORDS)


def _last_user_message(messages: Sequence[LlmMessage]) -> str:
    return next((m.content for m in reversed(messages) if m.role == "user"), "")


def _tool_results(messages: Sequence[LlmMessage]) -> dict[str, str]:
    """Tool name -> result text for the tool calls the last assistant message made."""
    results: dict[str, str] = {}
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant" and message.tool_calls:
            names = {call.id: call.name for call in message.tool_calls}
            for later in messages[index + 1 :]:
                if later.role == "tool" and later.tool_call_id in names:
                    results[names[later.tool_call_id]] = later.content
            return results
    return results


def _results_of(messages: Sequence[LlmMessage], tool: str) -> list[str]:
    """The results of the last assistant message's calls of ``tool``, in call order."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant" and message.tool_calls:
            ids = [call.id for call in message.tool_calls if call.name == tool]
            found = {m.tool_call_id: m.content for m in messages[index + 1 :] if m.role == "tool"}
            return [found[call_id] for call_id in ids if call_id in found]
    return []


def parse_sql_result(text: str) -> tuple[list[dict[str, str]], int] | None:
    """Rows and total row count from ``run_sql``'s result text; None when it failed."""
    first, _, body = text.partition("\n")
    if not first.startswith("Query returned "):
        return None
    total = int("".join(ch for ch in first.split(" row")[0] if ch.isdigit()) or 0)
    return list(csv.DictReader(body.splitlines())), total


class DemoLlmService(LlmService):
    """The scripted demo model as an ``LlmService``; streams its answers in small chunks.

    >>> DemoLlmService().model_name
    'threadline-demo (scripted, no API key)'
    """

    def __init__(self, *, chunk_words: int = 3, chunk_delay: float = 0.0) -> None:
        self.matcher = DemoQuestionMatcher()
        self.chunk_words = chunk_words
        self.chunk_delay = chunk_delay

    @property
    def model_name(self) -> str:
        return "threadline-demo (scripted, no API key)"

    def respond(self, request: LlmRequest) -> ScriptedResponse:
        """The next step: tool calls for a recognised question (or for the files shared with
        it), else the answer text."""
        messages = request.messages
        question = _last_user_message(messages)
        if (shared := files.shared_tables(question)) is not None:
            return self._files_step(request, shared[1])
        if (order := refund_asked(question)) is not None:
            return self._refund_step(request, order)
        matched = self.matcher.match(question)
        if messages and messages[-1].role == "tool":
            return self._text(self._answer(matched, _tool_results(messages)))
        if matched is None:
            return self._text(help_text(understood=_is_help(question)))
        available = {tool.name for tool in request.tools or []}
        if "run_sql" not in available:
            return self._text(f"{LABEL}\n\nYou don't have access to the `run_sql` tool here.")
        sql, chart = _with_top_n(question, matched.sql, matched.chart)
        calls = [_call("run_sql", {"sql": sql})]
        if chart is not None and "visualize_data" in available:
            calls.append(_call("visualize_data", {"sql": sql, **chart}))
        return ScriptedResponse(tool_calls=calls)

    def _files_step(self, request: LlmRequest, tables: list[files.SharedTable]) -> ScriptedResponse:
        """A question with files: their first rows (``query_files``), then what they hold."""
        if request.messages[-1].role == "tool":
            results = _results_of(request.messages, "query_files")
            return self._text(f"{LABEL}\n\n{files.describe_files(tables, results)}")
        if not tables:
            return self._text(f"{LABEL}\n\n{files.no_table_answer()}")
        if "query_files" not in {tool.name for tool in request.tools or []}:
            return self._text(f"{LABEL}\n\nYou don't have access to the `query_files` tool here.")
        return ScriptedResponse(
            tool_calls=[
                _call("query_files", {"sql": files.first_rows_sql(table)})
                for table in tables[: files.MAX_TABLES]
            ]
        )

    def _refund_step(self, request: LlmRequest, order: int) -> ScriptedResponse:
        """ "Refund order 42": ``refund_order`` (which waits for approval), then what came of
        it (refunded, or not run: denied, expired, stopped)."""
        if request.messages[-1].role == "tool":
            [result] = _results_of(request.messages, "refund_order") or [""]
            if result.startswith("Refunded"):
                return self._text(f"{LABEL}\n\nDone. {result}")
            return self._text(f"{LABEL}\n\nI did not refund order {order}. {result}")
        if "refund_order" not in {tool.name for tool in request.tools or []}:
            return self._text(f"{LABEL}\n\nYou can't refund orders here.")
        arguments = {"order_id": order, "reason": "asked in the thread"}
        return ScriptedResponse(tool_calls=[_call("refund_order", arguments)])

    def _answer(self, matched: DemoQuestion | None, results: dict[str, str]) -> str:
        if matched is None or "run_sql" not in results:
            return help_text(understood=False)
        parsed = parse_sql_result(results["run_sql"])
        if parsed is None:
            return f"{LABEL}\n\nThe query did not work: {results['run_sql']}"
        rows, total = parsed
        text = f"{LABEL}\n\n{matched.answer(rows, total)}"
        chart = results.get("visualize_data")
        if chart is not None and not chart.startswith("Created a"):
            text += f"\n\n(I could not draw the chart: {chart})"
        return text

    def _text(self, text: str) -> ScriptedResponse:
        words = text.split(" ")
        chunks = [
            " ".join(words[i : i + self.chunk_words]) + " "
            for i in range(0, len(words), self.chunk_words)
        ]
        chunks[-1] = chunks[-1][:-1]
        return ScriptedResponse(text=text, chunks=chunks, chunk_delay=self.chunk_delay)

    async def send_request(self, request: LlmRequest) -> LlmResponse:
        scripted = self.respond(request)
        return LlmResponse(
            content=scripted.text or None,
            tool_calls=list(scripted.tool_calls) or None,
            finish_reason="tool_use" if scripted.tool_calls else "end_turn",
        )

    async def stream_request(self, request: LlmRequest) -> AsyncIterator[LlmStreamChunk]:
        scripted = self.respond(request)
        for index, chunk in enumerate(scripted.text_chunks()):
            if index and scripted.chunk_delay:
                await asyncio.sleep(scripted.chunk_delay)  # paces the demo's streaming
            yield LlmStreamChunk(content=chunk)
        if scripted.tool_calls:
            yield LlmStreamChunk(tool_calls=list(scripted.tool_calls))
        yield LlmStreamChunk(finish_reason="tool_use" if scripted.tool_calls else "end_turn")
