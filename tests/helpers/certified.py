"""The tiny shop lens of ``tests/shop.py`` with two metrics and two certified answers.

:func:`files` returns it as ``{lens-relative path: bytes}`` for
:func:`reconciler.lens.load_lens`: revenue and order count, each with one answer.
"""

from __future__ import annotations

from tests.shop import CUSTOMERS, LENS, ORDERS

REVENUE = b"""\
name: revenue
label: Revenue
synonyms: [sales]
model: orders
expression: SUM(amount)
"""


COUNT = b"""\
name: order_count
label: Number of orders
synonyms: [orders]
model: orders
expression: COUNT(*)
"""


ANSWER = """\
id: {id}
question: {q}
sql: {sql}
status: active
provenance:
  certified_by: Ana
  certified_at: "2025-01-01"
"""


def files() -> dict[str, bytes]:
    """The lens's files, a fresh dict on every call."""
    return {
        "lens.yaml": LENS,
        "models/orders.yaml": ORDERS,
        "models/customers.yaml": CUSTOMERS,
        "metrics/revenue.yaml": REVENUE,
        "metrics/order_count.yaml": COUNT,
        "answers/rev.yaml": ANSWER.format(
            id="rev", q="What was total revenue?", sql="SELECT SUM(amount) FROM orders"
        ).encode(),
        "answers/cnt.yaml": ANSWER.format(
            id="cnt", q="How many orders?", sql="SELECT COUNT(*) FROM orders"
        ).encode(),
    }
