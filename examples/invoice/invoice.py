"""Invoice totals: line items, bulk discounts and sales tax, in exact decimal money.

Rules (the shop's pricing policy):

* a line's gross amount is unit price x quantity;
* a line of ``BULK_QUANTITY`` or more units gets ``BULK_DISCOUNT`` off its gross
  amount, rounded to the cent;
* sales tax is charged on what the customer actually pays for the goods: the
  subtotal after discounts;
* every amount is rounded to the cent, halves away from zero (ROUND_HALF_UP),
  as on a printed receipt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
BULK_QUANTITY = 10
BULK_DISCOUNT = Decimal("0.10")


def money(amount: Decimal) -> Decimal:
    """Round an amount to the cent, halves away from zero."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class LineItem:
    """One line of an invoice."""

    description: str
    unit_price: Decimal
    quantity: int

    def __post_init__(self) -> None:
        if self.quantity < 0:
            raise ValueError(f"quantity must not be negative: {self.quantity}")
        if self.unit_price < 0:
            raise ValueError(f"unit price must not be negative: {self.unit_price}")

    @property
    def gross(self) -> Decimal:
        """Unit price x quantity, before any discount."""
        return money(self.unit_price * self.quantity)

    @property
    def discount(self) -> Decimal:
        """The bulk discount on this line (zero below the bulk quantity)."""
        if self.quantity >= BULK_QUANTITY:
            return money(self.gross * BULK_DISCOUNT)
        return ZERO

    @property
    def net(self) -> Decimal:
        """What this line costs after its discount."""
        return self.gross - self.discount


@dataclass(frozen=True)
class Totals:
    """The bottom of an invoice."""

    subtotal: Decimal
    discount: Decimal
    taxable: Decimal
    tax: Decimal
    total: Decimal


def compute_totals(items: Iterable[LineItem], tax_rate: Decimal) -> Totals:
    """Add up an invoice.

    Args:
        items: the invoice lines.
        tax_rate: the sales tax rate as a fraction, e.g. Decimal("0.08") for 8 %.
    """
    lines = list(items)
    subtotal = sum((line.gross for line in lines), ZERO)
    discount = sum((line.discount for line in lines), ZERO)
    taxable = subtotal - discount
    tax = money(subtotal * tax_rate)
    total = taxable + tax
    return Totals(subtotal, discount, taxable, tax, total)


def render(items: Iterable[LineItem], tax_rate: Decimal) -> str:
    """A plain-text invoice."""
    lines = list(items)
    out = []
    for line in lines:
        out.append(
            f"{line.description:<20} {line.quantity:>4} x {line.unit_price:>8}  {line.net:>9}"
        )
    totals = compute_totals(lines, tax_rate)
    out.append(f"{'Subtotal':<37} {totals.subtotal:>9}")
    if totals.discount:
        out.append(f"{'Bulk discount':<37} {-totals.discount:>9}")
    out.append(f"{'Tax':<37} {totals.tax:>9}")
    out.append(f"{'Total':<37} {totals.total:>9}")
    return "\n".join(out)
