"""Two small lenses with nothing certified: they publish without a warehouse.

A lens with no certified answer is promoted with "gate SKIPPED", which keeps the
tests that use these about refs (retirement, sync), not about the suite.
"""

from __future__ import annotations

SALES = {
    "lenses/sales/lens.yaml": "name: sales\n",
    "lenses/sales/models/orders.yaml": "name: orders\ntable: orders\n",
}

FINANCE = {
    "lenses/finance/lens.yaml": "name: finance\n",
    "lenses/finance/models/ledger.yaml": "name: ledger\ntable: ledger\n",
}
