"""The LLM usage this process recorded, as Prometheus counters beside the bot's own.

``threadline_llm_tokens_total{kind,model}`` (kind: input, cache_read, cache_write, output)
and ``threadline_llm_cost_usd_total{model}`` (priced calls only), read from the ledger's
per-process counts when ``/metrics`` is scraped; each process reports its own calls, as
Prometheus counters do.

>>> from prometheus_client import CollectorRegistry, generate_latest
>>> from agent_core.usage.ledger import MemoryUsageLedger
>>> registry = CollectorRegistry()
>>> watch_usage(registry, MemoryUsageLedger())
>>> b"threadline_llm_tokens_total" in generate_latest(registry)
True
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from agent_core.usage.counts import KINDS
from agent_core.usage.ledger import UsageLedger
from agent_core.usage.prices import usd


class UsageCollector(Collector):
    """Reads ``ledger.recorded`` at each scrape (see the module docstring)."""

    def __init__(self, ledger: UsageLedger) -> None:
        self.ledger = ledger

    def collect(self) -> Iterator[CounterMetricFamily]:
        tokens = CounterMetricFamily(
            "threadline_llm_tokens", "LLM tokens used, by kind and model", labels=["kind", "model"]
        )
        cost = CounterMetricFamily(
            "threadline_llm_cost_usd",
            "LLM cost in US dollars at the configured prices (calls with a known price)",
            labels=["model"],
        )
        for model, totals in sorted(self.ledger.recorded.items()):
            for kind in KINDS:
                tokens.add_metric([kind, model], getattr(totals.tokens, kind))
            cost.add_metric([model], usd(totals.cost_nano))
        yield tokens
        yield cost


def watch_usage(registry: CollectorRegistry, ledger: UsageLedger) -> None:
    """Serve ``ledger``'s counts with the metrics of ``registry``."""
    registry.register(UsageCollector(ledger))
