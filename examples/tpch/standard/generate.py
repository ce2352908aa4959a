"""A small TPC-H database in SQLite that obeys the standard configuration's schema and constraints.

    python examples/tpch/standard/generate.py tpch.db [--customers N] [--seed S]

The tables of ``schema.sql`` beside this file, filled with values drawn from the
vocabularies of the TPC-H specification (https://www.tpc.org/tpch/, clause 4.2:
nation and region names, part types, containers, brands, ship modes, dates from
1992 to 1998), so that every one of the 22 queries of ``examples/tpch/queries``
selects rows.  The data satisfy every declared constraint: keys, NOT NULL
foreign keys (the composite ``lineitem → partsupp`` one included), the CHECK
ranges, and the fan-outs of ``../queries/constraints.txt`` (at most 41 orders per
customer, 7 lines per order, 5 nations per region), so ``cqsens release`` accepts
it.  Some customers have no orders (TPC-H q13 and q22 count them).

It is a test database, not the benchmark's generator: the sizes are small (by
default 300 customers, about 3,000 orders and 12,000 lines) and the
distributions are uniform.
"""

from __future__ import annotations

import argparse
import datetime
import random
import sqlite3
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

REGIONS = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]
NATIONS = [("ALGERIA", 0), ("ARGENTINA", 1), ("BRAZIL", 1), ("CANADA", 1), ("EGYPT", 4),
           ("ETHIOPIA", 0), ("FRANCE", 3), ("GERMANY", 3), ("INDIA", 2), ("INDONESIA", 2),
           ("IRAN", 4), ("IRAQ", 4), ("JAPAN", 2), ("JORDAN", 4), ("KENYA", 0), ("MOROCCO", 0),
           ("MOZAMBIQUE", 0), ("PERU", 1), ("CHINA", 2), ("ROMANIA", 3), ("SAUDI ARABIA", 4),
           ("VIETNAM", 2), ("RUSSIA", 3), ("UNITED KINGDOM", 3), ("UNITED STATES", 1)]
SEGMENTS = ["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"]
PRIORITIES = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
TYPE_1 = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"]
TYPE_2 = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"]
TYPE_3 = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"]
CONTAINER_1 = ["SM", "LG", "MED", "JUMBO", "WRAP"]
CONTAINER_2 = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"]
COLOURS = ["almond", "antique", "aquamarine", "azure", "beige", "black", "blue", "brown",
           "chartreuse", "coral", "forest", "green", "ivory", "khaki", "lace", "lime", "navy",
           "olive", "orange", "pink", "plum", "red", "salmon", "tan", "white", "yellow"]
SHIP_MODES = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
INSTRUCTIONS = ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"]
#: Country codes of TPC-H q22's ``substring(c_phone from 1 for 2) IN (...)``.
PHONE_CODES = ["13", "31", "23", "29", "30", "18", "17"]
START, END = datetime.date(1992, 1, 1), datetime.date(1998, 8, 2)


def _day(rnd: random.Random, low: datetime.date = START, high: datetime.date = END
         ) -> datetime.date:
    return low + datetime.timedelta(days=rnd.randrange((high - low).days + 1))


def _money(rnd: random.Random, low: float, high: float) -> float:
    return round(rnd.uniform(low, high), 2)


def _comment(rnd: random.Random, phrase: str, share: float) -> str:
    """A comment that contains ``phrase`` for about ``share`` of the rows."""
    words = " ".join(rnd.sample(COLOURS, 3))
    return f"{words} {phrase} {rnd.choice(COLOURS)}" if rnd.random() < share else words


def _catalogue(conn: sqlite3.Connection, rnd: random.Random, parts: int, suppliers: int
               ) -> list[tuple[int, int, float]]:
    """The public tables; returns the partsupp pairs with the part's retail price."""
    conn.executemany("INSERT INTO region VALUES (?, ?, '')", list(enumerate(REGIONS)))
    conn.executemany("INSERT INTO nation VALUES (?, ?, ?, '')",
                     [(n, name, r) for n, (name, r) in enumerate(NATIONS)])
    conn.executemany(
        "INSERT INTO supplier VALUES (?, ?, '', ?, ?, ?, ?)",
        [(s, f"Supplier#{s:09d}", s % 25, f"{10 + s % 25}-{rnd.randrange(100, 999)}",
          _money(rnd, -999.99, 9999.99), _comment(rnd, "Customer Complaints", 0.1))
         for s in range(suppliers)])
    part_rows, pairs = [], []
    for p in range(parts):
        price = round(900 + (p % 1200) + rnd.random(), 2)
        part_rows.append((p, " ".join(rnd.sample(COLOURS, 5)), f"Manufacturer#{1 + p % 5}",
                          f"Brand#{rnd.randrange(1, 6)}{rnd.randrange(1, 6)}",
                          f"{rnd.choice(TYPE_1)} {rnd.choice(TYPE_2)} {rnd.choice(TYPE_3)}",
                          rnd.randrange(1, 51),
                          f"{rnd.choice(CONTAINER_1)} {rnd.choice(CONTAINER_2)}", min(price, 2100),
                          ""))
        for s in rnd.sample(range(suppliers), min(4, suppliers)):
            pairs.append((p, s, min(price, 2100)))
    conn.executemany("INSERT INTO part VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", part_rows)
    conn.executemany("INSERT INTO partsupp VALUES (?, ?, ?, ?, '')",
                     [(p, s, rnd.randrange(1, 10000), _money(rnd, 1, 1000)) for p, s, _ in pairs])
    return pairs


def _line(rnd: random.Random, order: int, number: int, ordered: datetime.date,
          pair: tuple[int, int, float]) -> tuple[object, ...]:
    part, supplier, price = pair
    quantity = rnd.randrange(1, 51)
    shipped = ordered + datetime.timedelta(days=rnd.randrange(1, 122))
    committed = ordered + datetime.timedelta(days=rnd.randrange(30, 91))
    received = shipped + datetime.timedelta(days=rnd.randrange(1, 31))
    returned = "R" if received <= datetime.date(1995, 6, 17) and rnd.random() < 0.5 else (
        "A" if received <= datetime.date(1995, 6, 17) else "N")
    return (order, part, supplier, number, quantity, round(quantity * price, 2),
            round(rnd.randrange(0, 11) / 100, 2), round(rnd.randrange(0, 9) / 100, 2), returned,
            "F" if shipped <= datetime.date(1995, 6, 17) else "O", shipped.isoformat(),
            committed.isoformat(), received.isoformat(), rnd.choice(INSTRUCTIONS),
            rnd.choice(SHIP_MODES), "")


def _customers(conn: sqlite3.Connection, rnd: random.Random, customers: int,
               pairs: list[tuple[int, int, float]]) -> None:
    customer_rows, order_rows, line_rows = [], [], []
    order = 0
    for c in range(customers):
        nation = rnd.randrange(25)
        code = rnd.choice(PHONE_CODES) if rnd.random() < 0.5 else str(10 + nation)
        customer_rows.append((c, f"Customer#{c:09d}", "", nation,
                              f"{code}-{rnd.randrange(100, 999)}-{rnd.randrange(1000, 9999)}",
                              _money(rnd, -999.99, 9999.99), rnd.choice(SEGMENTS), ""))
        placed = 0 if c % 3 == 0 else rnd.randrange(1, 21)  # a third of customers have no order
        for _ in range(placed):
            ordered = _day(rnd, START, END - datetime.timedelta(151))
            lines = [_line(rnd, order, n + 1, ordered, rnd.choice(pairs))
                     for n in range(rnd.randrange(1, 8))]
            total = min(sum(float(line[5]) for line in lines), 600000.0)
            order_rows.append((order, c, rnd.choice("FOP"), round(total, 2), ordered.isoformat(),
                               rnd.choice(PRIORITIES), f"Clerk#{rnd.randrange(1000):09d}", 0,
                               _comment(rnd, "special requests", 0.05)))
            line_rows += lines
            order += 1
    conn.executemany("INSERT INTO customer VALUES (?, ?, ?, ?, ?, ?, ?, ?)", customer_rows)
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", order_rows)
    conn.executemany("INSERT INTO lineitem VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     line_rows)


def generate(path: Path, *, customers: int = 300, seed: int = 7) -> None:
    """Write a TPC-H database to ``path`` (a new SQLite file).

    Parameters
    ----------
    path : Path
        Where to write; an existing file is refused.
    customers : int
        Number of customers; parts are two thirds of it, suppliers a tenth (at least 10).
    seed : int
        Seed of the pseudo-random values: one seed, one database.

    Raises
    ------
    FileExistsError
        When ``path`` exists.
    """
    if path.exists():
        raise FileExistsError(f"{path} exists: give a new file")
    rnd = random.Random(seed)
    conn = sqlite3.connect(path)
    try:
        conn.executescript((HERE / "schema.sql").read_text())
        pairs = _catalogue(conn, rnd, parts=max(2 * customers // 3, 10),
                           suppliers=max(customers // 10, 10))
        _customers(conn, rnd, customers, pairs)
        conn.commit()
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", type=Path, help="the SQLite file to write (must not exist)")
    parser.add_argument("--customers", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    try:
        generate(args.path, customers=args.customers, seed=args.seed)
    except FileExistsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
