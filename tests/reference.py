"""Independent references the tests compare attnbook and the chapters with:
plain Python loops, no numpy and no attnbook."""
from __future__ import annotations

import math


def loop_softmax(xs) -> list[float]:
    """Textbook softmax of one row with Python floats (math.exp), max-shifted."""
    top = max(xs)
    e = [math.exp(x - top) for x in xs]
    return [v / sum(e) for v in e]
