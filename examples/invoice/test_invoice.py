"""Tests of the invoice rules (run: python -m pytest)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from invoice import LineItem, compute_totals, money, render

D = Decimal


def test_money_rounds_halves_up() -> None:
    assert money(D("0.125")) == D("0.13")
    assert money(D("2.675")) == D("2.68")  # a float would give 2.67
    assert money(D("1.004")) == D("1.00")


def test_no_discount_below_bulk_quantity() -> None:
    line = LineItem("pen", D("1.99"), 9)
    assert line.gross == D("17.91")
    assert line.discount == D("0.00")


def test_bulk_discount_on_the_line() -> None:
    line = LineItem("notebook", D("2.50"), 12)
    assert line.gross == D("30.00")
    assert line.discount == D("3.00")
    assert line.net == D("27.00")


def test_totals_without_discount() -> None:
    totals = compute_totals([LineItem("pen", D("1.99"), 3)], D("0.08"))
    assert totals.subtotal == D("5.97")
    assert totals.tax == D("0.48")
    assert totals.total == D("6.45")


def test_tax_is_charged_on_the_discounted_amount() -> None:
    items = [LineItem("notebook", D("2.50"), 12), LineItem("pen", D("1.99"), 1)]
    totals = compute_totals(items, D("0.08"))
    assert totals.subtotal == D("31.99")
    assert totals.discount == D("3.00")
    assert totals.taxable == D("28.99")
    assert totals.tax == D("2.32")  # 8 % of 28.99 = 2.3192
    assert totals.total == D("31.31")


def test_render_shows_the_total() -> None:
    text = render([LineItem("notebook", D("2.50"), 12)], D("0.10"))
    assert text.splitlines()[-1].endswith("29.70")


def test_negative_quantity_is_refused() -> None:
    with pytest.raises(ValueError, match="quantity"):
        LineItem("pen", D("1.99"), -1)
