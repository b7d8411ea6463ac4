"""What ``/usage`` and ``threadline usage`` show: today, the last 7 days, who spent most.

>>> import datetime as dt
>>> from agent_core.usage.ledger import UsageSummary
>>> day = dt.date(2026, 11, 26)
>>> print(report_text(UsageSummary(day, day), UsageSummary(day - dt.timedelta(days=6), day)))
**LLM usage** (UTC days)
- Today (2026-11-26): no LLM calls
- Last 7 days (2026-11-20 to 2026-11-26): no LLM calls
"""

from __future__ import annotations

from agent_core.usage.ledger import Dimension, Totals, UsageSummary
from agent_core.usage.prices import usd


def dollars(nano: int) -> str:
    """``$1,234.56``; under a dollar to a hundredth of a cent (``$0.0034``).

    >>> dollars(3_401_500), dollars(12_345_000_000)
    ('$0.0034', '$12.35')
    """
    amount = usd(nano)
    return f"${amount:,.2f}" if amount >= 1 else f"${amount:.4f}"


def cost_text(totals: Totals) -> str:
    """``$1.23``; ``$1.23 + unknown`` when some tokens had no price; ``unknown`` for none."""
    if totals.unpriced_tokens == 0:
        return dollars(totals.cost_nano)
    if totals.cost_nano == 0:
        return "unknown"
    return f"{dollars(totals.cost_nano)} + unknown"


def totals_text(totals: Totals) -> str:
    if totals.calls == 0:
        return "no LLM calls"
    tokens = totals.tokens
    return (
        f"{tokens.total:,} tokens ({tokens.input:,} input, {tokens.cache_read:,} cache read, "
        f"{tokens.cache_write:,} cache write, {tokens.output:,} output) in {totals.calls:,} "
        f"call{'s' if totals.calls != 1 else ''}, cost {cost_text(totals)}"
    )


def _span(summary: UsageSummary) -> str:
    count = (summary.last - summary.first).days + 1
    return "today" if count == 1 else f"last {count} days"


def _top(summary: UsageSummary, dimension: Dimension, title: str, limit: int) -> list[str]:
    ranked = summary.top(dimension, limit)
    if not ranked:
        return []
    lines = [f"**Top {title}, {_span(summary)}**"]
    lines += [
        f"{n}. `{r.key}`: {r.totals.tokens.total:,} tokens, {cost_text(r.totals)}"
        for n, r in enumerate(ranked, start=1)
    ]
    return lines


def report_text(today: UsageSummary, week: UsageSummary, *, limit: int = 5) -> str:
    """Markdown: the totals of today and the week, the top people, profiles and models."""
    lines = [
        "**LLM usage** (UTC days)",
        f"- Today ({today.first}): {totals_text(today.total)}",
        f"- {_span(week).capitalize()} ({week.first} to {week.last}): {totals_text(week.total)}",
    ]
    sections: tuple[tuple[Dimension, str], ...] = (
        ("person", "people"),
        ("profile", "profiles"),
        ("model", "models"),
    )
    for dimension, title in sections:
        found = _top(week, dimension, title, limit)
        lines += ["", *found] if found else []
    if week.total.unpriced_tokens:
        lines += [
            "",
            f"_{week.total.unpriced_tokens:,} tokens were for models with no price: "
            "set them in `[usage.prices]`._",
        ]
    return "\n".join(lines)
