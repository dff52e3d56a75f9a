"""Young/Daly intervals and the MTBF estimate, against values worked out by hand."""

import math

import pytest

from chronos.optimizer.baselines import daly_interval_s, estimate_mtbf_s, young_interval_s


def test_young_is_the_square_root_of_twice_cost_times_mtbf() -> None:
    assert young_interval_s(0.1, 3600) == pytest.approx(math.sqrt(720))


def test_daly_is_close_to_young_for_a_cheap_checkpoint_and_caps_at_the_mtbf() -> None:
    young, daly = young_interval_s(0.1, 3600), daly_interval_s(0.1, 3600)
    assert abs(daly / young - 1) < 0.01
    assert daly_interval_s(10, 4) == 4, "a checkpoint dearer than two MTBFs: checkpoint once per MTBF"


def test_mtbf_is_observed_time_per_failure_and_unknown_without_one() -> None:
    assert estimate_mtbf_s([100, 900, 2000], observed_s=3000) == 1000
    assert estimate_mtbf_s([], observed_s=3000) is None


def test_nonsense_costs_are_refused() -> None:
    with pytest.raises(ValueError):
        young_interval_s(0, 10)
    with pytest.raises(ValueError):
        daly_interval_s(1, -1)
