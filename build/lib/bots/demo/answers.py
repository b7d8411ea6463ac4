"""Markdown answers the scripted demo model writes from real ``run_sql`` rows.

Each function takes the result rows (CSV values as text, as the LLM sees them) and the total
row count, and only states numbers found in those rows.

>>> top_customers([{"customer": "Acme", "country": "Spain", "revenue": "1200.7",
...                 "orders": "3"}], 1).splitlines()[2]
'1. **Acme** (Spain): $1,201 from 3 orders'
"""

from __future__ import annotations

Rows = list[dict[str, str]]


def _money(value: str | float) -> str:
    return f"${float(value):,.0f}"


def _number(value: str | float) -> str:
    return f"{float(value):,.0f}"


def _change(old: float, new: float) -> str:
    if old == 0:
        return "n/a"
    return f"{(new - old) / old * 100:+.0f}%"


def _no_rows() -> str:
    return "The query ran but returned no rows, so there is nothing to report."


def top_customers(rows: Rows, total: int) -> str:
    if not rows:
        return _no_rows()
    lines = [f"**Top {len(rows)} customers by revenue** (cancelled orders excluded):", ""]
    for n, row in enumerate(rows, start=1):
        lines.append(
            f"{n}. **{row['customer']}** ({row['country']}): {_money(row['revenue'])} "
            f"from {row['orders']} orders"
        )
    combined = sum(float(row["revenue"]) for row in rows)
    lines += ["", f"Together they account for {_money(combined)}."]
    return "\n".join(lines)


def monthly_revenue(rows: Rows, total: int) -> str:
    if not rows:
        return _no_rows()
    values = [(row["month"], float(row["revenue"])) for row in rows]
    first, last = values[0], values[-1]
    best = max(values, key=lambda v: v[1])
    worst = min(values, key=lambda v: v[1])
    lines = [
        f"**Monthly revenue, {first[0]} to {last[0]}** ({len(values)} months):",
        "",
        f"- {first[0]}: {_money(first[1])} -> {last[0]}: {_money(last[1])} "
        f"({_change(first[1], last[1])})",
        f"- Best month: {best[0]} ({_money(best[1])}); weakest: {worst[0]} ({_money(worst[1])})",
    ]
    if len(values) >= 24:
        previous = sum(v for _, v in values[-24:-12])
        recent = sum(v for _, v in values[-12:])
        lines.append(
            f"- Last 12 months: {_money(recent)} vs {_money(previous)} the 12 months "
            f"before ({_change(previous, recent)})"
        )
    return "\n".join(lines)


def sales_by_category(rows: Rows, total: int) -> str:
    if not rows:
        return _no_rows()
    revenue = sum(float(row["revenue"]) for row in rows)
    lines = ["**Revenue by product category** (cancelled orders excluded):", ""]
    lines += [
        f"- **{row['category']}**: {_money(row['revenue'])} "
        f"({float(row['revenue']) / revenue * 100:.0f}%, {_number(row['units'])} units)"
        for row in rows
    ]
    lines += ["", f"Total: {_money(revenue)} across {len(rows)} categories."]
    return "\n".join(lines)


def orders_last_month(rows: Rows, total: int) -> str:
    if not rows or not rows[0].get("orders"):
        return "There were no orders last month."
    row = rows[0]
    orders, previous = int(row["orders"]), int(row["previous_month"] or 0)
    cancelled = int(row["cancelled"] or 0)
    return (
        f"**{orders:,} orders** were placed last month ({row['month']}), "
        f"{cancelled:,} of them cancelled.\n\n"
        f"That is {_change(previous, orders)} compared with the month before "
        f"({previous:,} orders)."
    )


def top_products(rows: Rows, total: int) -> str:
    if not rows:
        return _no_rows()
    lines = [f"**Top {len(rows)} products by units sold:**", ""]
    lines += [
        f"{n}. **{row['product']}** ({row['category']}): {_number(row['units'])} units, "
        f"{_money(row['revenue'])}"
        for n, row in enumerate(rows, start=1)
    ]
    return "\n".join(lines)


def revenue_by_country(rows: Rows, total: int) -> str:
    if not rows:
        return _no_rows()
    revenue = sum(float(row["revenue"]) for row in rows)
    lines = ["**Revenue by customer country:**", ""]
    lines += [
        f"- **{row['country']}**: {_money(row['revenue'])} "
        f"({float(row['revenue']) / revenue * 100:.0f}%) from {row['customers']} customers"
        for row in rows
    ]
    return "\n".join(lines)
