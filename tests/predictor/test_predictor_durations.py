import pytest

from forescale_predictor.durations import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("60s", 60), ("1m", 60), ("180", 180), (180, 180), ("1h30m", 5400), ("500ms", 0.5), ("2.5s", 2.5), (" 15s ", 15)],
)
def test_parses(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "10x", "-5", "0", "1m-", "m1"])
def test_rejects_with_the_input_named(text):
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert "duration" in str(info.value)
