import pytest

from chronos.errors import InvalidInput
from chronos.model import CheckpointSettings, format_interval, parse_interval_ms


@pytest.mark.parametrize(
    ("text", "millis"),
    [("500ms", 500), ("10s", 10_000), ("2min", 120_000), ("1h", 3_600_000), ("30", 30_000), ("1.5s", 1500)],
)
def test_accepts_flink_duration_spellings(text: str, millis: int) -> None:
    assert parse_interval_ms(text) == millis


@pytest.mark.parametrize("text", ["-5s", "abc", "0s", "", "10 parsecs", "0"])
def test_rejects_what_flink_would_fail_on_later(text: str) -> None:
    with pytest.raises(InvalidInput, match="invalid interval"):
        parse_interval_ms(text)


def test_formats_the_shortest_exact_duration() -> None:
    assert [format_interval(ms) for ms in (250, 2000, 120_000, 1500)] == ["250ms", "2s", "2min", "1500ms"]


def test_checkpoint_settings_render_flink_keys() -> None:
    config = CheckpointSettings(5000, "rocksdb", incremental=True).flink_config()
    assert config == {
        "execution.checkpointing.interval": "5s",
        "state.backend.type": "rocksdb",
        "execution.checkpointing.incremental": "true",
    }
