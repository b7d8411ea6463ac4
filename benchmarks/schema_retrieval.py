"""Schema retrieval at 2,000 tables: schema tokens per turn, and whether the right table is
among those sent when the question names it only indirectly.

The catalog is generated: 20 kinds of business table (customer master, invoice headers,
stock levels, shipments, ...) for each of 100 branches, so 2,000 tables whose names are
cryptic abbreviations (``b042_cst_mstr``, ``b042_inv_hdr``); each has typical columns and a
comment naming the branch ("Invoice headers of the Lisbon branch"). Each test question
asks about one table without its name ("What did we bill clients in Lisbon last month?"),
through synonyms, column words and the branch. A hit: the target table is among the tables
``SchemaIndex.select`` puts into the prompt for that question (default budget 8,000 tokens;
tokens are counted as characters / 4, see ``agent_core.database.catalog``).

    .venv/bin/python benchmarks/schema_retrieval.py [--tables-per-branch 20] [--questions 300]

The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_core.database.catalog import Catalog, ColumnInfo, TableInfo, render_table
from agent_core.database.schema_index import DEFAULT_MAX_TOKENS, SchemaIndex

# abbreviation, what the table holds, columns, questions that never say the table's name
KINDS: list[tuple[str, str, list[str], list[str]]] = [
    (
        "cst_mstr",
        "Customer master: one row per client account",
        ["cst_no", "legal_name", "email", "segment", "signed_up_on"],
        ["How many clients signed up in {b} this year?", "list the email of every buyer in {b}"],
    ),
    (
        "inv_hdr",
        "Invoice headers: what we billed each client",
        ["inv_no", "cst_no", "billed_amount", "issued_on", "due_on"],
        ["What did we bill clients in {b} last month?", "overdue invoices in {b}"],
    ),
    (
        "inv_ln",
        "Invoice lines: items on each invoice",
        ["inv_no", "line_no", "sku", "qty", "net_amount"],
        ["which items were invoiced most in {b}", "invoiced quantity per sku for {b}"],
    ),
    (
        "ord_hdr",
        "Sales orders placed by clients",
        ["ord_no", "cst_no", "placed_at", "channel", "status"],
        ["How many purchases did {b} take online?", "order status counts in {b}"],
    ),
    (
        "shp_evt",
        "Shipment events from the carriers",
        ["shp_no", "ord_no", "carrier", "scanned_at", "event_code"],
        ["Which carrier delivers fastest for {b}?", "parcels scanned by each carrier in {b}"],
    ),
    (
        "wh_stk",
        "Stock on hand per warehouse bin",
        ["sku", "bin", "on_hand", "reserved", "counted_at"],
        ["How much inventory is on hand in {b}?", "reserved units per sku in the {b} warehouse"],
    ),
    (
        "sup_mstr",
        "Suppliers we buy from",
        ["sup_no", "vendor_name", "country", "payment_terms"],
        ["Which vendors supply {b}?", "payment terms of the {b} vendors"],
    ),
    (
        "po_hdr",
        "Purchase orders sent to suppliers",
        ["po_no", "sup_no", "ordered_on", "expected_on", "po_value"],
        ["What have we ordered from vendors for {b}?", "late purchase orders for {b}"],
    ),
    (
        "emp_mstr",
        "Employees and their roles",
        ["emp_no", "full_name", "job_title", "hired_on", "manager_no"],
        ["How many staff work in {b}?", "who was hired in {b} this year"],
    ),
    (
        "pay_run",
        "Payroll runs: salary paid per employee",
        ["run_no", "emp_no", "gross_pay", "net_pay", "paid_on"],
        ["What is the total salary cost of {b}?", "gross pay per employee in {b}"],
    ),
    (
        "tkt_hdr",
        "Support tickets opened by clients",
        ["tkt_no", "cst_no", "opened_at", "priority", "resolved_at"],
        ["How many complaints did {b} get?", "time to resolve support requests in {b}"],
    ),
    (
        "web_ses",
        "Website sessions from analytics",
        ["session_id", "visitor_id", "started_at", "landing_page", "device"],
        ["How many visits did the {b} website get?", "sessions per device for {b}"],
    ),
    (
        "mkt_cmp",
        "Marketing campaigns and their budget",
        ["cmp_no", "campaign_name", "budget", "starts_on", "ends_on"],
        ["What is the advertising budget in {b}?", "campaigns running in {b}"],
    ),
    (
        "prd_cat",
        "Product catalogue with list prices",
        ["sku", "product_name", "category", "list_price"],
        ["What does the catalogue of {b} cost?", "product categories sold in {b}"],
    ),
    (
        "prc_chg",
        "Price changes over time",
        ["sku", "old_price", "new_price", "changed_at"],
        ["When did prices change in {b}?", "price increases in {b}"],
    ),
    (
        "rtn_hdr",
        "Returns and refunds",
        ["rtn_no", "ord_no", "refund_amount", "reason", "returned_on"],
        ["How much was refunded in {b}?", "why do buyers in {b} send items back"],
    ),
    (
        "gl_jrnl",
        "General ledger journal entries",
        ["jrnl_no", "account", "debit", "credit", "posted_on"],
        ["Show the ledger debits of {b}", "accounting entries posted in {b}"],
    ),
    (
        "fx_rate",
        "Currency exchange rates by day",
        ["currency", "rate_to_eur", "rate_date"],
        ["Which currency conversion rates apply in {b}?", "exchange rate history for {b}"],
    ),
    (
        "asset_reg",
        "Fixed assets register: machines and vehicles",
        ["asset_no", "description", "bought_on", "book_value"],
        ["What equipment does {b} own?", "book value of vehicles in {b}"],
    ),
    (
        "ene_use",
        "Energy use per meter reading",
        ["meter_id", "kwh", "read_at"],
        ["How much electricity did {b} consume?", "kwh per meter in {b}"],
    ),
]

BRANCHES = """Lisbon Porto Madrid Seville Valencia Barcelona Bilbao Lyon Marseille Nantes Lille
Bordeaux Toulouse Nice Paris Brussels Antwerp Ghent Utrecht Rotterdam Amsterdam Eindhoven
Cologne Hamburg Berlin Munich Dresden Leipzig Stuttgart Frankfurt Vienna Graz Linz Zurich
Geneva Basel Bern Milan Turin Genoa Bologna Florence Rome Naples Palermo Bari Athens Sofia
Bucharest Budapest Prague Brno Krakow Warsaw Gdansk Poznan Vilnius Riga Tallinn Helsinki
Tampere Oslo Bergen Stockholm Gothenburg Malmo Copenhagen Aarhus Dublin Cork Belfast
Glasgow Edinburgh Leeds Manchester Liverpool Bristol Cardiff London Brighton Oxford
Cambridge Reykjavik Valletta Nicosia Zagreb Split Ljubljana Bratislava Kosice Belgrade
Skopje Tirana Podgorica Sarajevo Chisinau Kyiv Lviv Odesa Minsk""".split()


def build_catalog(kinds: int) -> Catalog:
    tables = []
    for number, branch in enumerate(BRANCHES[:100]):
        for abbreviation, comment, columns, _ in KINDS[:kinds]:
            table = TableInfo(
                name=f"b{number:03d}_{abbreviation}",
                ddl="",
                comment=f"{comment} of the {branch} branch",
                columns=[ColumnInfo(name=c, type="TEXT") for c in columns],
            )
            table.ddl = render_table(table, lambda name: name)
            tables.append(table)
    return Catalog(backend="postgresql", tables=tables)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables-per-branch", type=int, default=20)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--max-tokens", type=int, default=DEFAULT_MAX_TOKENS)
    args = parser.parse_args()
    catalog = build_catalog(args.tables_per_branch)
    started = time.perf_counter()
    index = SchemaIndex(catalog)
    build_s = time.perf_counter() - started
    rng = random.Random(14)
    tokens, hits, first, seconds = [], 0, 0, []
    for _ in range(args.questions):
        number = rng.randrange(100)
        abbreviation, _, _, questions = KINDS[rng.randrange(args.tables_per_branch)]
        question = rng.choice(questions).format(b=BRANCHES[number])
        target = f"b{number:03d}_{abbreviation}"
        started = time.perf_counter()
        chosen = index.select(question, max_tokens=args.max_tokens)
        seconds.append(time.perf_counter() - started)
        names = [table.name for table in chosen.tables]
        tokens.append(chosen.tokens)
        hits += target in names
        first += bool(names) and names[0] == target
    figures = {
        "tables": len(catalog.tables),
        "catalog_tokens": catalog.tokens,
        "questions": args.questions,
        "budget_tokens": args.max_tokens,
        "schema_tokens_per_turn_max": max(tokens),
        "schema_tokens_per_turn_median": int(statistics.median(tokens)),
        "hit_rate": round(hits / args.questions, 4),
        "top1_rate": round(first / args.questions, 4),
        "index_build_s": round(build_s, 3),
        "select_ms_median": round(statistics.median(seconds) * 1000, 2),
    }
    print(
        f"{figures['tables']} tables ({figures['catalog_tokens']:,} tokens in all); "
        f"{args.questions} questions naming their table indirectly"
    )
    print(
        f"schema tokens per turn: max {figures['schema_tokens_per_turn_max']:,}, median "
        f"{figures['schema_tokens_per_turn_median']:,} (budget {args.max_tokens:,})"
    )
    print(
        f"right table sent: {figures['hit_rate']:.1%} (ranked first: "
        f"{figures['top1_rate']:.1%}); select {figures['select_ms_median']} ms "
        "median"
    )
    print(json.dumps({"benchmark": "schema_retrieval", **figures}, sort_keys=True))


if __name__ == "__main__":
    main()
