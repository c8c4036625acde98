"""A tiny lens used by tests that work from bytes: orders joined to customers."""

from __future__ import annotations

LENS = b'name: shop\nas_of: "2024-12-31"\n'
ORDERS = b"""\
name: orders
table: orders
time_dimensions:
  - name: order_date
    data_type: date
facts:
  - name: amount
    data_type: number
joins:
  - to: customers
    on: {customer_id: customer_id}
"""
CUSTOMERS = b"""\
name: customers
table: customers
dimensions:
  - name: segment
"""
REVENUE = b"""\
name: revenue
synonyms: [sales]
model: orders
expression: SUM(amount)
"""
ORDER_COUNT = b"""\
name: order_count
synonyms: [orders]
model: orders
expression: COUNT(*)
"""
