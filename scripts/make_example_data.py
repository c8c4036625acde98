"""Generate the example lenses' seed data: a small, realistic retail warehouse.

Writes, under ``ROOT`` (default: the repository root)::

    lenses/sales/seeds/regions.csv     region_id, region_name, country
    lenses/sales/seeds/customers.csv   customer_id, customer_name, segment, region_id, signup_date
    lenses/sales/seeds/products.csv    product_id, product_name, category, unit_cost
    lenses/sales/seeds/orders.csv      order_id, order_date, customer_id, product_id, quantity,
                                       unit_price, discount, unit_cost, status
    lenses/finance/seeds/budgets.csv   month, region_id, budget_amount

The embedded warehouse loads every lens's seeds as tables named by the CSV stem,
so the finance lens reads ``orders`` from the sales seeds and adds ``budgets``.

Shape of the data: two calendar years (2023-01-01 .. 2024-12-31) of single-line
orders with year-on-year growth, a holiday peak in November/December, weekend
lift, category seasonality (sports in summer, toys in December), a list-price
rise in March 2024 and a cost rise in January 2024. ``orders.unit_cost`` is the
cost at the time of sale (so gross profit is a single-table metric);
``products.unit_cost`` is today's standard cost. Budgets are set per region and
month: 2023 from a noisy plan around what happened, 2024 as 2023's actuals plus
a growth target.

Determinism: one ``random.Random`` with a fixed seed drives everything, money is
kept in integer cents and printed with two decimals, rows are sorted by key and
lines end in ``\\n``, so a run is byte-for-byte reproducible on any platform.

Usage::

    python scripts/make_example_data.py [--out ROOT]
"""

from __future__ import annotations

import argparse
import csv
import io
import random
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from itertools import accumulate
from pathlib import Path

SEED = 20250115
N_ORDERS = 12_000
N_CUSTOMERS = 1_800
FIRST_DAY = date(2023, 1, 1)
LAST_DAY = date(2024, 12, 31)
PRICE_RISE_DAY = date(2024, 3, 1)
PRICE_RISE_PCT = 4
COST_RISE_PCT = 5
FIRST_ORDER_ID = 100_001

REGIONS: tuple[tuple[int, str, str, float], ...] = (
    # region_id, region_name, country, share of customers
    (1, "North", "United States", 0.16),
    (2, "East", "United States", 0.25),
    (3, "South", "United States", 0.20),
    (4, "West", "United States", 0.22),
    (5, "Central", "United States", 0.11),
    (6, "Canada", "Canada", 0.06),
)

SEGMENTS: tuple[tuple[str, float, float], ...] = (
    # segment, share of customers, relative ordering activity
    ("Consumer", 0.62, 1.0),
    ("SMB", 0.27, 1.7),
    ("Enterprise", 0.11, 2.6),
)

# category -> (markup range over cost, return share in percent, monthly demand factor)
CATEGORIES: dict[str, tuple[tuple[float, float], int, tuple[float, ...]]] = {
    "Electronics": ((1.30, 1.55), 8, (0.9, 0.8, 0.9, 0.9, 0.9, 1.0, 1.0, 1.1, 1.1, 1.0, 1.4, 1.6)),
    "Furniture": ((1.80, 2.20), 5, (1.1, 1.0, 1.1, 1.0, 1.0, 1.0, 0.9, 1.0, 1.0, 1.0, 1.0, 0.9)),
    "Apparel": ((2.20, 2.80), 13, (0.8, 0.8, 1.0, 1.1, 1.1, 1.0, 0.9, 1.1, 1.2, 1.0, 1.2, 1.3)),
    "Sports": ((1.70, 2.10), 6, (0.7, 0.7, 0.9, 1.1, 1.3, 1.5, 1.5, 1.3, 1.0, 0.8, 0.8, 0.9)),
    "Beauty": ((2.50, 3.20), 3, (1.0, 1.1, 1.0, 1.0, 1.1, 1.0, 1.0, 1.0, 1.0, 1.0, 1.2, 1.4)),
    "Toys": ((1.80, 2.30), 4, (0.6, 0.6, 0.7, 0.7, 0.8, 0.8, 0.8, 0.8, 0.9, 1.1, 1.7, 2.4)),
}

# category -> (product name, current unit cost in cents, popularity)
PRODUCTS: dict[str, tuple[tuple[str, int, float], ...]] = {
    "Electronics": (
        ("Wireless Earbuds", 3_150, 1.6),
        ("Noise Cancelling Headphones", 11_200, 1.0),
        ("27in 4K Monitor", 21_400, 0.8),
        ("Mechanical Keyboard", 5_480, 1.1),
        ("Portable Charger 20000mAh", 1_890, 1.5),
        ("Smart Speaker", 4_260, 1.2),
        ("Action Camera", 15_900, 0.5),
        ("USB-C Docking Station", 8_350, 0.7),
        ("Fitness Tracker", 4_720, 1.0),
        ("Ultralight Laptop 14in", 61_800, 0.4),
    ),
    "Furniture": (
        ("Ergonomic Office Chair", 13_600, 1.2),
        ("Standing Desk Frame", 18_900, 0.8),
        ("Oak Bookshelf", 7_450, 0.9),
        ("Walnut Coffee Table", 11_800, 0.6),
        ("Upholstered Dining Chair", 5_320, 1.1),
        ("Filing Cabinet 3-Drawer", 6_980, 0.7),
        ("Floor Lamp", 3_260, 1.3),
        ("Two-Seat Sofa", 38_500, 0.3),
        ("Bar Stool", 4_110, 0.8),
        ("Conference Table", 42_700, 0.2),
    ),
    "Apparel": (
        ("Merino Crew Sweater", 2_640, 1.2),
        ("Waterproof Rain Jacket", 4_380, 0.9),
        ("Slim Fit Chinos", 1_870, 1.3),
        ("Organic Cotton T-Shirt", 640, 2.0),
        ("Leather Belt", 1_150, 0.8),
        ("Down Puffer Vest", 3_920, 0.7),
        ("Running Socks 3-Pack", 420, 1.6),
        ("Denim Jacket", 3_110, 0.8),
        ("Wool Beanie", 560, 1.1),
        ("Linen Button Shirt", 1_590, 1.0),
    ),
    "Sports": (
        ("Yoga Mat", 1_280, 1.5),
        ("Adjustable Dumbbells", 9_850, 0.6),
        ("Road Bike Helmet", 3_470, 0.9),
        ("Trail Running Shoes", 5_160, 1.2),
        ("Camping Tent 4-Person", 12_300, 0.5),
        ("Insulated Water Bottle", 890, 2.0),
        ("Resistance Band Set", 1_040, 1.3),
        ("Tennis Racket", 6_720, 0.6),
        ("Hiking Backpack 40L", 5_890, 0.8),
        ("Foam Roller", 970, 1.0),
    ),
    "Beauty": (
        ("Vitamin C Serum", 980, 1.5),
        ("Daily Moisturizer SPF 30", 760, 1.8),
        ("Hair Dryer Pro", 4_150, 0.6),
        ("Bamboo Makeup Brush Set", 1_120, 0.9),
        ("Facial Cleanser", 540, 1.7),
        ("Beard Trimmer", 2_380, 0.8),
        ("Scented Candle Trio", 830, 1.2),
        ("Shampoo and Conditioner Set", 690, 1.4),
        ("Electric Toothbrush", 2_960, 0.9),
        ("Eau de Parfum 50ml", 3_740, 0.7),
    ),
    "Toys": (
        ("Building Blocks 500pc", 2_150, 1.4),
        ("Remote Control Car", 2_870, 1.0),
        ("Wooden Train Set", 3_360, 0.8),
        ("Plush Bear", 720, 1.6),
        ("Strategy Board Game", 1_680, 1.2),
        ("1000-Piece Puzzle", 910, 1.1),
        ("Kids Art Easel", 2_540, 0.6),
        ("Science Kit", 1_930, 0.9),
        ("Dollhouse", 6_480, 0.4),
        ("Foam Dart Blaster", 1_460, 1.0),
    ),
}

FIRST_NAMES = (
    "Aaliyah",
    "Adrian",
    "Aisha",
    "Alejandro",
    "Amara",
    "Andre",
    "Anika",
    "Ben",
    "Bianca",
    "Caleb",
    "Camila",
    "Chloe",
    "Daniel",
    "Deepa",
    "Diego",
    "Elena",
    "Elijah",
    "Emeka",
    "Fatima",
    "Felix",
    "Grace",
    "Hannah",
    "Hiro",
    "Imani",
    "Isaac",
    "Jade",
    "Jamal",
    "Julia",
    "Kai",
    "Keisha",
    "Liam",
    "Lucia",
    "Malik",
    "Maya",
    "Mei",
    "Nadia",
    "Noah",
    "Olivia",
    "Omar",
    "Priya",
    "Quinn",
    "Rafael",
    "Rosa",
    "Samuel",
    "Sofia",
    "Tariq",
    "Tessa",
    "Victor",
    "Yara",
    "Zoe",
)
LAST_NAMES = (
    "Abbott",
    "Alvarez",
    "Bauer",
    "Bennett",
    "Brooks",
    "Chen",
    "Costa",
    "Dawson",
    "Diaz",
    "Ellis",
    "Ferreira",
    "Fischer",
    "Garcia",
    "Gupta",
    "Hale",
    "Hughes",
    "Ibrahim",
    "Jensen",
    "Kaur",
    "Kim",
    "Kowalski",
    "Larsen",
    "Lopez",
    "Martin",
    "Mendes",
    "Murphy",
    "Nakamura",
    "Nguyen",
    "Novak",
    "Okafor",
    "Ortiz",
    "Patel",
    "Quinn",
    "Reyes",
    "Rossi",
    "Santos",
    "Schmidt",
    "Silva",
    "Singh",
    "Sullivan",
    "Tanaka",
    "Torres",
    "Tran",
    "Turner",
    "Vargas",
    "Walsh",
    "Weber",
    "Wright",
    "Yilmaz",
    "Zhang",
)
COMPANY_WORDS = (
    "Alder",
    "Amber",
    "Anchor",
    "Aspen",
    "Beacon",
    "Birch",
    "Bluestone",
    "Brightwater",
    "Cascade",
    "Cedar",
    "Clearview",
    "Copper",
    "Crescent",
    "Driftwood",
    "Elm",
    "Evergreen",
    "Fairfield",
    "Falcon",
    "Granite",
    "Harbor",
    "Hawthorn",
    "Highland",
    "Ironwood",
    "Juniper",
    "Keystone",
    "Lakeside",
    "Maple",
    "Meadow",
    "Northgate",
    "Oakridge",
    "Orchard",
    "Pinecrest",
    "Prairie",
    "Redwood",
    "Ridgeline",
    "Riverbend",
    "Sagebrush",
    "Silverline",
    "Summit",
    "Sunrise",
    "Tidewater",
    "Timberline",
    "Valley",
    "Westbrook",
    "Willow",
)
COMPANY_TRADES = (
    "Accounting",
    "Architects",
    "Bakery",
    "Builders",
    "Consulting",
    "Dental",
    "Design",
    "Engineering",
    "Fitness",
    "Health",
    "Hospitality",
    "Labs",
    "Law",
    "Logistics",
    "Media",
    "Outfitters",
    "Partners",
    "Realty",
    "Robotics",
    "Schools",
    "Software",
    "Studios",
    "Supply",
    "Systems",
    "Travel",
)
ENTERPRISE_SUFFIXES = ("Group", "Holdings", "Corporation", "International", "Industries")
SMB_SUFFIXES = ("LLC", "Co", "Inc", "& Sons", "Collective")

MONTH_DEMAND = (0.80, 0.78, 0.92, 0.95, 1.00, 1.02, 0.98, 1.00, 0.97, 1.05, 1.35, 1.55)
WEEKDAY_DEMAND = (0.95, 1.00, 1.00, 1.00, 1.05, 1.20, 0.90)  # Monday .. Sunday
ANNUAL_GROWTH = 0.22


@dataclass(frozen=True)
class Customer:
    """One customer row."""

    customer_id: int
    name: str
    segment: str
    region_id: int
    signup_date: date
    activity: float


@dataclass(frozen=True)
class Product:
    """One product row plus what the order generator needs to price it."""

    product_id: int
    name: str
    category: str
    unit_cost: int  # cents, current standard cost
    list_price: int  # cents, before the 2024 price rise
    popularity: float


@dataclass(frozen=True)
class Order:
    """One single-line order row (money in cents)."""

    order_id: int
    order_date: date
    customer_id: int
    product_id: int
    quantity: int
    unit_price: int
    discount: int
    unit_cost: int
    status: str


def money(cents: int) -> str:
    """Format integer cents as a fixed two-decimal string (``123456`` -> ``"1234.56"``)."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"


def pct_of(cents: int, percent: float) -> int:
    """``percent`` % of ``cents``, rounded half up to a whole cent."""
    return int(cents * percent / 100 + 0.5)


def days(first: date, last: date) -> list[date]:
    """Every calendar day from ``first`` to ``last`` inclusive."""
    return [first + timedelta(n) for n in range((last - first).days + 1)]


def make_customers(rng: random.Random) -> list[Customer]:
    """Customers with unique names; about 60% signed up before the order history starts."""
    region_ids = [r[0] for r in REGIONS]
    region_weights = [r[3] for r in REGIONS]
    seg_names = [s[0] for s in SEGMENTS]
    seg_weights = [s[1] for s in SEGMENTS]
    activity_of = {s[0]: s[2] for s in SEGMENTS}
    early = days(date(2020, 1, 1), date(2022, 12, 31))
    late = days(FIRST_DAY, date(2024, 11, 30))
    used: set[str] = set()
    customers = []
    for customer_id in range(1, N_CUSTOMERS + 1):
        segment = rng.choices(seg_names, seg_weights)[0]
        name = _unique_name(rng, segment, used)
        region_id = rng.choices(region_ids, region_weights)[0]
        signup = rng.choice(early) if rng.random() < 0.6 else rng.choice(late)
        # A skewed spread of how often a customer orders (no libm calls: portable bits).
        activity = activity_of[segment] * (0.25 + 3.0 * rng.random() ** 2)
        customers.append(Customer(customer_id, name, segment, region_id, signup, activity))
    return customers


def _unique_name(rng: random.Random, segment: str, used: set[str]) -> str:
    while True:
        if segment == "Consumer":
            name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        else:
            suffixes = ENTERPRISE_SUFFIXES if segment == "Enterprise" else SMB_SUFFIXES
            words = (rng.choice(COMPANY_WORDS), rng.choice(COMPANY_TRADES), rng.choice(suffixes))
            name = " ".join(words)
        if name not in used:
            used.add(name)
            return name


def make_products(rng: random.Random) -> list[Product]:
    """Sixty products, ten per category, list prices from a per-category markup."""
    products = []
    product_id = 1
    for category, items in PRODUCTS.items():
        (low, high), _, _ = CATEGORIES[category]
        for name, cost, popularity in items:
            markup = low + (high - low) * rng.random()
            # Retail prices end in .99 (or .49 under ten dollars).
            raw = int(cost * markup)
            list_price = (raw // 100) * 100 + (49 if raw < 1_000 else 99)
            products.append(Product(product_id, name, category, cost, list_price, popularity))
            product_id += 1
    return products


def day_weight(day: date) -> float:
    """Relative demand on ``day``: growth trend x month seasonality x weekday."""
    years_in = (day - FIRST_DAY).days / 365.0
    return (
        (1 + ANNUAL_GROWTH * years_in) * MONTH_DEMAND[day.month - 1] * WEEKDAY_DEMAND[day.weekday()]
    )


def make_orders(
    rng: random.Random, customers: Sequence[Customer], products: Sequence[Product]
) -> list[Order]:
    """``N_ORDERS`` orders in date order; only customers already signed up may order."""
    calendar = days(FIRST_DAY, LAST_DAY)
    order_days = sorted(rng.choices(calendar, [day_weight(d) for d in calendar], k=N_ORDERS))
    by_signup = sorted(customers, key=lambda c: (c.signup_date, c.customer_id))
    signup_days = [c.signup_date for c in by_signup]
    cum_activity = list(accumulate(c.activity for c in by_signup))
    orders = []
    for offset, day in enumerate(order_days):
        eligible = bisect_right(signup_days, day)
        pick = rng.random() * cum_activity[eligible - 1]
        customer = by_signup[bisect_left(cum_activity, pick, hi=eligible - 1)]
        product = _pick_product(rng, products, day)
        orders.append(_make_order(rng, FIRST_ORDER_ID + offset, day, customer, product))
    return orders


def _pick_product(rng: random.Random, products: Sequence[Product], day: date) -> Product:
    weights = [p.popularity * CATEGORIES[p.category][2][day.month - 1] for p in products]
    return rng.choices(products, weights)[0]


def _make_order(
    rng: random.Random, order_id: int, day: date, customer: Customer, product: Product
) -> Order:
    percents: tuple[int, ...]
    if customer.segment == "Consumer":
        quantity = rng.choice((1, 1, 1, 1, 2, 2, 3))
        discount_chance, percents = 0.22, (5, 10, 15, 20)
    elif customer.segment == "SMB":
        quantity = rng.randint(1, 8)
        discount_chance, percents = 0.40, (5, 10, 10, 15)
    else:
        quantity = rng.randint(4, 30)
        discount_chance, percents = 0.70, (5, 10, 12, 15, 20)
    if day.month == 11 and day.day >= 20:  # the Black Friday week
        discount_chance = min(0.9, discount_chance + 0.35)
    price = product.list_price
    if day >= PRICE_RISE_DAY:
        price = (pct_of(price, 100 + PRICE_RISE_PCT) // 100) * 100 + 99
    cost = product.unit_cost
    if day.year == 2023:
        cost = int(cost * 100 / (100 + COST_RISE_PCT) + 0.5)
    discount = 0
    if rng.random() < discount_chance:
        discount = pct_of(quantity * price, rng.choice(percents))
    returned_pct = CATEGORIES[product.category][1]
    roll = rng.random() * 100
    if roll < 4:
        status = "cancelled"
    elif roll < 4 + returned_pct:
        status = "returned"
    else:
        status = "completed"
    return Order(
        order_id,
        day,
        customer.customer_id,
        product.product_id,
        quantity,
        price,
        discount,
        cost,
        status,
    )


def make_budgets(
    rng: random.Random,
    orders: Sequence[Order],
    customers: Sequence[Customer],
) -> list[tuple[date, int, int]]:
    """Monthly budget per region, in whole hundreds of dollars (cents in the tuple).

    2023: a plan within -10%..+12% of what happened. 2024: 2023's actual net
    revenue for the same region and month plus a 15% growth target, +-3%.
    """
    region_of = {c.customer_id: c.region_id for c in customers}
    actual: dict[tuple[int, int, int], int] = {}
    for o in orders:
        if o.status == "completed":
            key = (o.order_date.year, o.order_date.month, region_of[o.customer_id])
            actual[key] = actual.get(key, 0) + o.quantity * o.unit_price - o.discount
    budgets = []
    for year in (2023, 2024):
        for month in range(1, 13):
            for region_id, _, _, _ in REGIONS:
                base = actual.get((2023, month, region_id), 0)
                factor = 0.90 + 0.22 * rng.random() if year == 2023 else 1.12 + 0.06 * rng.random()
                amount = int(base * factor / 10_000 + 0.5) * 10_000
                budgets.append((date(year, month, 1), region_id, amount))
    return budgets


def to_csv(header: Sequence[str], rows: Sequence[Sequence[object]]) -> bytes:
    """CSV bytes with a header, minimal quoting and ``\\n`` line endings."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue().encode("utf-8")


def build() -> dict[str, bytes]:
    """Generate every seed file: ``{repository-relative posix path: bytes}``."""
    rng = random.Random(SEED)
    customers = make_customers(rng)
    products = make_products(rng)
    orders = make_orders(rng, customers, products)
    budgets = make_budgets(rng, orders, customers)
    sales = "lenses/sales/seeds"
    return {
        f"{sales}/regions.csv": to_csv(
            ("region_id", "region_name", "country"), [r[:3] for r in REGIONS]
        ),
        f"{sales}/customers.csv": to_csv(
            ("customer_id", "customer_name", "segment", "region_id", "signup_date"),
            [
                (c.customer_id, c.name, c.segment, c.region_id, c.signup_date.isoformat())
                for c in customers
            ],
        ),
        f"{sales}/products.csv": to_csv(
            ("product_id", "product_name", "category", "unit_cost"),
            [(p.product_id, p.name, p.category, money(p.unit_cost)) for p in products],
        ),
        f"{sales}/orders.csv": to_csv(
            (
                "order_id",
                "order_date",
                "customer_id",
                "product_id",
                "quantity",
                "unit_price",
                "discount",
                "unit_cost",
                "status",
            ),
            [
                (
                    o.order_id,
                    o.order_date.isoformat(),
                    o.customer_id,
                    o.product_id,
                    o.quantity,
                    money(o.unit_price),
                    money(o.discount),
                    money(o.unit_cost),
                    o.status,
                )
                for o in orders
            ],
        ),
        "lenses/finance/seeds/budgets.csv": to_csv(
            ("month", "region_id", "budget_amount"),
            [(m.isoformat(), r, money(a)) for m, r, a in sorted(budgets)],
        ),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Write the seed CSVs under ``--out`` (default: the repository root)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="root to write lenses/<lens>/seeds/*.csv under (default: the repository root)",
    )
    args = parser.parse_args(argv)
    for rel, content in build().items():
        target = args.out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        rows = content.count(b"\n") - 1
        print(f"wrote {rel} ({rows} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
