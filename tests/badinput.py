"""The check behind every table of bad inputs (test_bad_input*.py)."""
from __future__ import annotations

import pytest


def ids(cases) -> list[str]:
    """Test ids from the cases' descriptions."""
    return [c[0].replace(" ", "_") for c in cases]


def assert_clear_error(description, call, error, fragments) -> None:
    """call() raises `error`, whose message contains every one of `fragments`
    (the argument's name, and what was expected and what arrived)."""
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    missing = [f for f in fragments if f not in message]
    assert not missing, f"{description}: message {message!r} lacks {missing}"
