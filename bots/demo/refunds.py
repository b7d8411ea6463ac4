"""``refund_order``: the sample shop's one tool that changes things, so every channel shows
approval in the thread out of the box (``agent_core.approvals``).

It waits for approval (``approval = "always"``; the asker by default, ``[tools.refund_order]``
says otherwise), then records a refund of an order of the sample shop in a ledger of its own
(``demo_refunds.sqlite`` beside the shop: the shop's numbers never change). The scripted demo
model calls it for "refund order 42".

>>> import asyncio, tempfile
>>> from pathlib import Path
>>> from bots.demo.data import ensure_demo_database
>>> folder = Path(tempfile.mkdtemp())
>>> tool = RefundOrderTool(ensure_demo_database(folder))
>>> tool.approval, tool.name
('always', 'refund_order')
>>> asyncio.run(tool.refund(RefundArgs(order_id=1, reason="damaged"), by="Ana")).startswith(
...     "Refunded order 1")
True
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from pydantic import BaseModel, Field

from agent_core.clock import utcnow
from agent_core.context import ToolContext
from agent_core.tool_contract import Tool, ToolResult

LEDGER = "demo_refunds.sqlite"


class RefundArgs(BaseModel):
    order_id: int = Field(gt=0, description="The order to refund (orders.id)")
    reason: str = Field(default="", max_length=500, description="Why, in a few words")


class RefundOrderTool(Tool[RefundArgs]):
    """Refund an order of the sample shop (waits for approval)."""

    name = "refund_order"
    description = (
        "Refund an order of the shop in full (it waits for a person's approval first). "
        "Use only when asked to refund a specific order."
    )
    approval = "always"

    def __init__(self, shop: Path) -> None:
        self.shop = shop
        self.ledger = shop.with_name(LEDGER)

    def get_args_schema(self) -> type[RefundArgs]:
        return RefundArgs

    async def execute(self, context: ToolContext, args: RefundArgs) -> ToolResult:
        by = context.user.username or context.user.id
        try:
            said = await self.refund(args, by=by)
        except LookupError as missing:
            return ToolResult(success=False, result_for_llm=str(missing), error=str(missing))
        return ToolResult(success=True, result_for_llm=said)

    async def refund(self, args: RefundArgs, *, by: str) -> str:
        """Record the refund; what it did, in words. Raises ``LookupError`` for an order the
        shop does not have, or one refunded already."""
        return await asyncio.to_thread(self._refund, args, by)

    def _refund(self, args: RefundArgs, by: str) -> str:
        shop = sqlite3.connect(f"file:{self.shop}?mode=ro", uri=True)
        try:
            row = shop.execute(
                "SELECT ROUND(SUM(quantity * unit_price), 2) FROM order_items WHERE order_id = ?",
                (args.order_id,),
            ).fetchone()
        finally:
            shop.close()
        if row is None or row[0] is None:
            raise LookupError(f"The shop has no order {args.order_id}.")
        amount = float(row[0])
        ledger = sqlite3.connect(self.ledger)
        try:
            with ledger:
                ledger.execute(
                    "CREATE TABLE IF NOT EXISTS refunds (order_id INTEGER PRIMARY KEY, "
                    "amount REAL NOT NULL, reason TEXT NOT NULL, refunded_by TEXT NOT NULL, "
                    "refunded_at TEXT NOT NULL)"
                )
                try:
                    ledger.execute(
                        "INSERT INTO refunds VALUES (?, ?, ?, ?, ?)",
                        (
                            args.order_id,
                            amount,
                            args.reason,
                            by,
                            utcnow().isoformat(timespec="seconds"),
                        ),
                    )
                except sqlite3.IntegrityError:
                    raise LookupError(f"Order {args.order_id} was refunded already.") from None
        finally:
            ledger.close()
        return f"Refunded order {args.order_id}: ${amount:,.2f} back to the customer."
