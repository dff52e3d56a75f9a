"""The shop job's exactly-once check: counted per customer from the input topics, so that a replay after a
failure that wrote an order twice, or a lost commit that wrote it never, shows as exactly that."""

from __future__ import annotations

from collections import Counter

from chronos.jobs.shop_delivery import check_delivery


def paid(order: str, customer: str) -> dict[str, str]:
    return {"order_id": order, "customer": customer}


def test_every_paid_order_once_is_exact() -> None:
    result = check_delivery(Counter({"c1": 2, "c2": 1}), [paid("o1", "c1"), paid("o2", "c1"), paid("o3", "c2")])
    assert result.exact and result.expected == 3 and result.written == 3


def test_an_order_written_twice_is_a_duplicate_and_a_customer_short_of_one_lost_it() -> None:
    result = check_delivery(Counter({"c1": 2, "c2": 1}), [paid("o1", "c1"), paid("o1", "c1"), paid("o3", "c2")])
    assert (result.lost, result.duplicated, result.written) == (1, 1, 3)
    assert not result.exact
