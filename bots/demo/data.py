"""The demo's sample database: a small online shop, generated locally (no download).

Tables (SQLite)::

    customers(id, name, country, segment, created_at)
    products(id, name, category, unit_price)
    orders(id, customer_id, order_date, status)            status: completed|shipped|cancelled
    order_items(id, order_id, product_id, quantity, unit_price)

Orders cover the 24 full calendar months before the current one (UTC), with growth, a
year-end peak and a few big accounts, so "last month" and "monthly trend" questions always
have answers. The same seed and month give the same data; when the month changes the file
is rebuilt so the window moves with it.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import sqlite3
from pathlib import Path

from agent_core.clock import utcnow

SCHEMA_VERSION = "1"
DATABASE_NAME = "demo_shop.sqlite"

SCHEMA = """
CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    country TEXT NOT NULL,
    segment TEXT NOT NULL,          -- Enterprise, Mid-market, Small business
    created_at TEXT NOT NULL        -- ISO date
);
CREATE TABLE products (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    category TEXT NOT NULL,
    unit_price REAL NOT NULL        -- list price in USD
);
CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    order_date TEXT NOT NULL,       -- ISO date
    status TEXT NOT NULL            -- completed, shipped, cancelled
);
CREATE TABLE order_items (
    id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL REFERENCES orders(id),
    product_id INTEGER NOT NULL REFERENCES products(id),
    quantity INTEGER NOT NULL,
    unit_price REAL NOT NULL        -- price paid per unit in USD, after discount
);
CREATE INDEX orders_by_date ON orders(order_date);
CREATE INDEX items_by_order ON order_items(order_id);
CREATE TABLE demo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

_CATALOGUE: dict[str, list[tuple[str, float]]] = {
    "Laptops": [
        ("Aero 13 Laptop", 1199.0),
        ("Aero 15 Pro Laptop", 1899.0),
        ("Nimbus Chromebook", 429.0),
        ("Forge Workstation", 2799.0),
    ],
    "Monitors": [
        ("ClearView 24in Monitor", 189.0),
        ("ClearView 27in 4K Monitor", 449.0),
        ("UltraWide 34in Monitor", 699.0),
    ],
    "Accessories": [
        ("Glide Wireless Mouse", 29.0),
        ("Keystone Mechanical Keyboard", 119.0),
        ("Dock Pro USB-C Hub", 89.0),
        ("Halo Noise-Cancelling Headset", 159.0),
        ("Travel Laptop Sleeve", 39.0),
        ("HD Webcam", 69.0),
    ],
    "Furniture": [
        ("Ergo Office Chair", 349.0),
        ("Lift Standing Desk", 599.0),
        ("Monitor Arm", 129.0),
        ("Task Lamp", 49.0),
    ],
    "Software": [
        ("Cloud Backup (annual seat)", 60.0),
        ("Security Suite (annual seat)", 45.0),
        ("Design Studio License", 240.0),
        ("Project Planner (annual seat)", 96.0),
    ],
    "Services": [
        ("Onsite Setup", 150.0),
        ("Extended Warranty 3y", 199.0),
        ("Training Workshop", 800.0),
    ],
}
_COUNTRIES = [
    ("United States", 30),
    ("United Kingdom", 12),
    ("Germany", 12),
    ("France", 9),
    ("Canada", 8),
    ("Netherlands", 6),
    ("Australia", 6),
    ("Japan", 6),
    ("Spain", 5),
    ("Brazil", 6),
]
_SEGMENTS = [("Enterprise", 15), ("Mid-market", 35), ("Small business", 50)]
_NAME_FIRST = [
    "Acme",
    "Blue",
    "Bright",
    "Cedar",
    "Delta",
    "Evergreen",
    "Falcon",
    "Granite",
    "Harbor",
    "Iron",
    "Juniper",
    "Keystone",
    "Lumen",
    "Maple",
    "Northwind",
    "Orbit",
    "Pioneer",
    "Quartz",
    "River",
    "Summit",
    "Tidal",
    "Union",
    "Vertex",
    "Willow",
]
_NAME_SECOND = [
    "Analytics",
    "Bakery",
    "Biotech",
    "Consulting",
    "Design",
    "Dynamics",
    "Foods",
    "Health",
    "Labs",
    "Logistics",
    "Media",
    "Motors",
    "Partners",
    "Retail",
    "Robotics",
    "Studios",
    "Systems",
    "Travel",
]
_NAME_SUFFIX = ["Inc", "Ltd", "GmbH", "Co", "Group", "LLC"]


def month_window(today: dt.date) -> tuple[dt.date, dt.date]:
    """First day of the first month and first day of the current month (exclusive end)."""
    end = today.replace(day=1)
    start = end.replace(year=end.year - 2)
    return start, end


def _weighted(rng: random.Random, pairs: list[tuple[str, int]]) -> str:
    return rng.choices([p[0] for p in pairs], weights=[p[1] for p in pairs])[0]


def _customers(rng: random.Random, start: dt.date, count: int) -> list[tuple[object, ...]]:
    names: set[str] = set()
    rows: list[tuple[object, ...]] = []
    while len(rows) < count:
        name = f"{rng.choice(_NAME_FIRST)} {rng.choice(_NAME_SECOND)} {rng.choice(_NAME_SUFFIX)}"
        if name in names:
            continue
        names.add(name)
        joined = start + dt.timedelta(days=rng.randint(-400, 500))
        rows.append(
            (
                len(rows) + 1,
                name,
                _weighted(rng, _COUNTRIES),
                _weighted(rng, _SEGMENTS),
                joined.isoformat(),
            )
        )
    return rows


def _products() -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    for category, items in _CATALOGUE.items():
        for name, price in items:
            rows.append((len(rows) + 1, name, category, price))
    return rows


def _orders_per_day(day: dt.date, start: dt.date) -> float:
    growth = 1.0 + 0.6 * (day - start).days / 730  # +60 % over two years
    season = {11: 1.35, 12: 1.5, 1: 0.85, 7: 0.9, 8: 0.85}.get(day.month, 1.0)
    weekday = 0.55 if day.weekday() >= 5 else 1.0
    return 2.7 * growth * season * weekday


def _quantity(rng: random.Random, category: str, segment: str) -> int:
    seats = category in ("Software",) or (category == "Accessories" and segment == "Enterprise")
    return rng.randint(5, 40) if seats else rng.choice([1, 1, 1, 2, 2, 3, 4, 5])


def _fill(db: sqlite3.Connection, rng: random.Random, start: dt.date, end: dt.date) -> None:
    customers = _customers(rng, start, 240)
    products = _products()
    db.executemany("INSERT INTO customers VALUES (?, ?, ?, ?, ?)", customers)
    db.executemany("INSERT INTO products VALUES (?, ?, ?, ?)", products)
    # a few big accounts: Pareto-like ordering weights, enterprise customers order more
    weights = [
        (1.0 / (i + 1) ** 0.8) * (3.0 if c[3] == "Enterprise" else 1.0)
        for i, c in enumerate(customers)
    ]
    orders: list[tuple[object, ...]] = []
    items: list[tuple[object, ...]] = []
    day = start
    while day < end:
        for _ in range(_poisson(rng, _orders_per_day(day, start))):
            customer = rng.choices(customers, weights=weights)[0]
            status = rng.choices(["completed", "shipped", "cancelled"], weights=[88, 7, 5])[0]
            order_id = len(orders) + 1
            orders.append((order_id, customer[0], day.isoformat(), status))
            for product in rng.sample(products, rng.choice([1, 1, 2, 2, 3, 4])):
                discount = rng.choice([1.0, 1.0, 1.0, 0.95, 0.9, 0.85])
                quantity = _quantity(rng, str(product[2]), str(customer[3]))
                price = round(float(str(product[3])) * discount, 2)
                items.append((len(items) + 1, order_id, product[0], quantity, price))
        day += dt.timedelta(days=1)
    db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", orders)
    db.executemany("INSERT INTO order_items VALUES (?, ?, ?, ?, ?)", items)


def _poisson(rng: random.Random, mean: float) -> int:
    # Knuth's method: fine for the small daily means used here
    limit, count, product = pow(2.718281828459045, -mean), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


def _is_current(path: Path, seed: int, start: dt.date) -> bool:
    if not path.is_file():
        return False
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            meta = dict(db.execute("SELECT key, value FROM demo_meta").fetchall())
        finally:
            db.close()
    except sqlite3.Error:
        return False
    expected = {"schema_version": SCHEMA_VERSION, "seed": str(seed), "first_month": str(start)}
    return all(meta.get(k) == v for k, v in expected.items())


def ensure_demo_database(data_dir: Path, *, seed: int = 2024, today: dt.date | None = None) -> Path:
    """The sample database in ``data_dir``, (re)built when missing or from another month.

    The file is written under a temporary name and renamed into place, so a concurrent
    reader never sees a half-built database.
    """
    today = today or utcnow().date()
    start, end = month_window(today)
    path = Path(data_dir) / DATABASE_NAME
    if _is_current(path, seed, start):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    scratch.unlink(missing_ok=True)
    db = sqlite3.connect(scratch)
    try:
        with db:
            db.executescript(SCHEMA)
            _fill(db, random.Random(f"{seed}:{start}"), start, end)
            db.executemany(
                "INSERT INTO demo_meta VALUES (?, ?)",
                [
                    ("schema_version", SCHEMA_VERSION),
                    ("seed", str(seed)),
                    ("first_month", str(start)),
                    ("end_month", str(end)),
                ],
            )
    finally:
        db.close()
    os.replace(scratch, path)
    return path
