"""attnbook.optim.Adam refuses what torch.optim.Adam refuses (and a little more),
before any step, with a message that names the argument and shows what arrived."""
from __future__ import annotations

import pytest
import torch
from badinput import assert_clear_error

from attnbook.optim import Adam


def p():
    return torch.nn.Parameter(torch.ones(3))


SHARED = p()

BAD = [
    (lambda: Adam([p()], float("nan")), ValueError, ["lr", "finite", "nan"]),
    (lambda: Adam([p()], -0.1), ValueError, ["lr", ">= 0", "-0.1"]),
    (lambda: Adam([p()], float("inf")), ValueError, ["lr", "inf"]),
    (lambda: Adam([p()], "0.1"), TypeError, ["lr", "'0.1'"]),
    (lambda: Adam([p()], True), TypeError, ["lr", "bool"]),
    (lambda: Adam([p()], 0.1, eps=-1e-8), ValueError, ["eps", "> 0", "-1e-08"]),
    (lambda: Adam([p()], 0.1, eps=0), ValueError, ["eps", "> 0", "0.0"]),
    (lambda: Adam([p()], 0.1, betas=(1.0, 0.999)), ValueError, ["betas[0]", "[0, 1)", "1.0"]),
    (lambda: Adam([p()], 0.1, betas=(0.9, -0.1)), ValueError, ["betas[1]", "-0.1"]),
    (lambda: Adam([p()], 0.1, betas=(0.9, float("nan"))), ValueError, ["betas[1]", "nan"]),
    (lambda: Adam([p()], 0.1, betas=0.9), TypeError, ["betas", "pair", "0.9"]),
    (lambda: Adam([p()], 0.1, betas=(0.9,)), TypeError, ["betas", "pair", "(0.9,)"]),
    (lambda: Adam(torch.nn.Linear(2, 2), 0.1), TypeError,
     ["params", "model.parameters()", "Linear"]),
    (lambda: Adam(torch.ones(3, requires_grad=True), 0.1), TypeError, ["params", "Tensor"]),
    (lambda: Adam([], 0.1), ValueError, ["params", "at least one"]),
    (lambda: Adam((q for q in []), 0.1), ValueError, ["params", "at least one"]),
    (lambda: Adam([1.0], 0.1), TypeError, ["params[0]", "floating-point tensor", "float"]),
    (lambda: Adam([torch.ones(2, dtype=torch.long)], 0.1), TypeError,
     ["params[0]", "torch.int64"]),
    (lambda: Adam([torch.ones(2, requires_grad=True) * 2], 0.1), ValueError,
     ["params[0]", "leaf"]),
    (lambda: Adam([SHARED, SHARED], 0.1), ValueError, ["params[1]", "twice"]),
    (lambda: Adam([{"params": [p()], "lr": -1}], 0.1), ValueError,
     ["lr of params[0]", "-1"]),
    (lambda: Adam([{"param": [p()]}], 0.1), ValueError, ["params[0]", "'param'"]),
    (lambda: Adam([p(), {"params": [p()]}], 0.1), TypeError, ["params", "not both"]),
    (lambda: Adam([SHARED], 0.1).descend(SHARED * 2), TypeError, ["loss", "one element", "(3,)"]),
    (lambda: Adam([SHARED], 0.1).descend(1.0), TypeError, ["loss", "float"]),
    (lambda: Adam([SHARED], 0.1).descend((SHARED * float("nan")).sum()), ValueError,
     ["loss", "finite", "nan"]),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_input_is_named_with_what_was_expected(i):
    call, error, fragments = BAD[i]
    assert_clear_error(f"case {i}", call, error, fragments)
