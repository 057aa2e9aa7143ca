"""softmax and masked_softmax against independent references and edge cases."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from reference import loop_softmax

from attnbook import masked_softmax, softmax


def test_softmax_of_4_minus1_2point1_matches_a_plain_loop():
    np.testing.assert_allclose(softmax([4.0, -1.0, 2.1]), loop_softmax([4.0, -1.0, 2.1]),
                               rtol=1e-15)


def test_uint8_input_is_cast_before_arithmetic_unlike_scipy():
    ours = softmax(np.uint8([0, 255]))
    np.testing.assert_allclose(ours, [math.exp(-255), 1.0], rtol=1e-12)
    # the bug we protect against: scipy computes x - max in uint8 and wraps around
    assert scipy.special.softmax(np.uint8([0, 255]))[0] > 0.7


@pytest.mark.parametrize("big", [710.0, 1e4, 1e300])
def test_large_inputs_do_not_overflow(big):
    np.testing.assert_allclose(softmax([big, 0.0]), [1.0, 0.0], atol=1e-300)
    np.testing.assert_allclose(softmax([big, big]), [0.5, 0.5])


def test_naive_softmax_gives_nan_at_710_and_ours_does_not():
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp([710.0, 0.0]) / np.exp([710.0, 0.0]).sum()
    assert np.isnan(naive).any()
    assert not np.isnan(softmax([710.0, 0.0])).any()


def test_bool_and_int_inputs_give_float64():
    assert softmax([True, False]).dtype == np.float64
    np.testing.assert_allclose(softmax(np.int64([1, 0])), loop_softmax([1.0, 0.0]))


def test_float32_input_is_computed_in_float64():
    x = np.float32([0.1, 0.2, 0.3])
    np.testing.assert_allclose(softmax(x), loop_softmax([float(v) for v in x]), rtol=1e-15)


def test_minus_inf_gets_exactly_zero_and_all_minus_inf_row_gets_zeros():
    w = softmax([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]])
    assert w[0, 1] == 0.0
    np.testing.assert_allclose(w[0].sum(), 1.0)
    assert (w[1] == 0.0).all()


def test_axis_argument_normalises_along_that_axis():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(softmax(x, axis=0).sum(axis=0), np.ones(4))
    np.testing.assert_allclose(softmax(x, axis=0)[:, 1], loop_softmax(list(x[:, 1])))


@pytest.mark.parametrize("shape", [(1,), (5,), (3, 1), (2, 3, 4), (0,), (2, 0)])
def test_shapes_are_preserved_including_degenerate_ones(shape):
    x = np.random.default_rng(0).normal(size=shape)
    assert softmax(x).shape == shape


def test_temperature_near_zero_is_the_dict_lookup_and_large_is_the_average():
    x = [3.0, 1.0, 2.0]
    np.testing.assert_allclose(softmax(x, temperature=1e-3), [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(softmax(x, temperature=1e6), [1 / 3] * 3, atol=1e-6)
    np.testing.assert_allclose(softmax(x, temperature=2.0), loop_softmax([1.5, 0.5, 1.0]))


def test_tiny_temperature_does_not_overflow():
    np.testing.assert_allclose(softmax([1e300, -1e300], temperature=1e-300), [1.0, 0.0])


finite_rows = arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 6)),
                     elements=st.floats(-1e6, 1e6))


@settings(max_examples=200, deadline=None)
@given(finite_rows)
def test_weights_lie_in_0_1_and_rows_sum_to_1(x):
    w = softmax(x)
    assert ((w >= 0) & (w <= 1)).all()
    np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)


@settings(max_examples=200, deadline=None)
@given(finite_rows, st.floats(-1e3, 1e3))
def test_adding_a_constant_to_a_row_changes_nothing(x, c):
    np.testing.assert_allclose(softmax(x + c), softmax(x), atol=1e-9)


@settings(max_examples=200, deadline=None)
@given(finite_rows)
def test_order_is_preserved(x):
    w = softmax(x)
    for row, wrow in zip(x, w, strict=True):
        for i in range(len(row)):
            for j in range(len(row)):
                if row[i] > row[j]:
                    assert wrow[i] >= wrow[j]


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, st.integers(1, 8), elements=st.floats(-50, 50)))
def test_agrees_with_scipy_on_float_input(x):
    np.testing.assert_allclose(softmax(x), scipy.special.softmax(x), rtol=1e-12, atol=1e-300)


# ---- masked_softmax -------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(finite_rows, st.data())
def test_masked_positions_get_exactly_zero(x, data):
    mask = data.draw(arrays(np.bool_, x.shape))
    w = masked_softmax(x, mask=mask)
    assert (w[~mask] == 0.0).all()
    rows_with_keys = mask.any(axis=-1)
    np.testing.assert_allclose(w[rows_with_keys].sum(axis=-1), 1.0)
    assert (w[~rows_with_keys] == 0.0).all()


def test_masked_softmax_equals_softmax_over_the_kept_keys():
    x = np.array([1.0, 5.0, 2.0, -3.0])
    mask = np.array([True, False, True, True])
    w = masked_softmax(x, mask=mask)
    np.testing.assert_allclose(w[mask], loop_softmax([1.0, 2.0, -3.0]))


def test_a_minus_1e6_additive_mask_can_give_a_masked_key_all_the_weight_ours_cannot():
    scores = np.array([-2e6, 0.0])      # a key we keep has a very negative score
    mask = np.array([True, False])      # key 1 must be ignored
    additive = softmax(scores + np.where(mask, 0.0, -1e6))
    assert additive[1] > 0.99           # the masked key wins: the bug
    np.testing.assert_array_equal(masked_softmax(scores, mask=mask), [1.0, 0.0])


def test_valid_lens_per_batch_row_as_in_d2l():
    x = np.random.default_rng(1).normal(size=(2, 2, 4))
    w = masked_softmax(x, valid_lens=np.array([2, 3]))
    for b, n in enumerate([2, 3]):
        for q in range(2):
            np.testing.assert_allclose(w[b, q, :n], loop_softmax(list(x[b, q, :n])))
            assert (w[b, q, n:] == 0).all()


def test_valid_lens_per_query():
    x = np.random.default_rng(2).normal(size=(2, 2, 4))
    lens = np.array([[1, 3], [2, 4]])
    w = masked_softmax(x, valid_lens=lens)
    for b in range(2):
        for q in range(2):
            n = lens[b, q]
            np.testing.assert_allclose(w[b, q, :n], loop_softmax(list(x[b, q, :n])))
            assert (w[b, q, n:] == 0).all()


def test_valid_length_zero_gives_an_all_zero_row_not_nan():
    w = masked_softmax(np.ones((1, 2, 3)), valid_lens=np.array([0]))
    assert (w == 0).all() and not np.isnan(w).any()


def test_mask_and_valid_lens_combine():
    x = np.zeros((1, 1, 4))
    mask = np.array([False, True, True, True])
    w = masked_softmax(x, mask=mask, valid_lens=np.array([3]))
    np.testing.assert_allclose(w[0, 0], [0, 0.5, 0.5, 0])
