"""Part I (chapters 1-4): the key results the prose quotes, checked against
independent computations (plain Python, no attnbook) of the same examples."""
from __future__ import annotations

import math

import pytest
from nbrun import glued, glued_float
from reference import loop_softmax

pytestmark = pytest.mark.slow

TABLE = {"apple": 10.0, "banana": 5.0, "chair": 2.0}
VEC = {"fruit": (1.0, 0.5), "apple": (2.2, 1.2), "banana": (1.4, 2.0), "cherry": (0.6, 0.31),
       "chair": (0.3, -2.0), "vegetable": (-0.5, 1.0), "carrot": (-0.7, 1.8),
       "broccoli": (-1.0, 1.6), "sofa": (0.7, -2.6)}


def dot(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True))


def cos(a, b):
    return dot(a, b) / math.sqrt(dot(a, a) * dot(b, b))


def test_ch1_exact_lookup_returns_apples_value():
    assert glued_float("01_looking_things_up", "apple_value") == TABLE["apple"]


def test_ch2_soft_lookup_of_fruit_is_8_and_uniform_is_the_mean():
    assert glued_float("02_soft_lookup", "fruit_value") == pytest.approx(
        0.6 * 10 + 0.4 * 5 + 0.0 * 2)
    assert glued_float("02_soft_lookup", "uniform_value") == pytest.approx(17 / 3)


def test_ch3_dot_products_and_rankings():
    g = "03_word_vectors"
    for k in ("apple", "banana", "chair"):
        assert glued_float(g, f"dot_{k}") == pytest.approx(dot(VEC["fruit"], VEC[k]))
    fruits = ["apple", "banana", "cherry"]
    assert glued(g)["top_dot"].strip("'") == max(fruits, key=lambda w: dot(VEC["fruit"], VEC[w]))
    assert glued(g)["top_cos"].strip("'") == max(fruits, key=lambda w: cos(VEC["fruit"], VEC[w]))
    assert glued(g)["top_dot"] != glued(g)["top_cos"], "the example must show a disagreement"
    assert glued_float(g, "cos_cherry") == pytest.approx(cos(VEC["fruit"], VEC["cherry"]))


def test_ch3_similarity_matrix_says_what_the_prose_says():
    """Within-cluster blocks are large, fruit-furniture entries negative, and
    short cherry's entries small: smaller with banana than banana's with carrot,
    and smaller on its own diagonal than with apple."""
    g = "03_word_vectors"
    for a, b in (("apple", "banana"), ("carrot", "broccoli"), ("chair", "sofa")):
        assert dot(VEC[a], VEC[b]) > 3
    assert all(dot(VEC[f], VEC[c]) < 0
               for f in ("apple", "banana", "cherry") for c in ("chair", "sofa"))
    assert glued_float(g, "S_cherry_banana") == pytest.approx(dot(VEC["cherry"], VEC["banana"]))
    assert glued_float(g, "S_banana_carrot") == pytest.approx(dot(VEC["banana"], VEC["carrot"]))
    assert glued_float(g, "S_cherry_banana") < glued_float(g, "S_banana_carrot")
    assert glued_float(g, "S_cherry_apple") == pytest.approx(dot(VEC["cherry"], VEC["apple"]))
    assert glued_float(g, "S_cherry_cherry") == pytest.approx(dot(VEC["cherry"], VEC["cherry"]))
    assert glued_float(g, "S_cherry_cherry") < glued_float(g, "S_cherry_apple")


def test_ch3_analogy_lands_on_queen():
    man, woman, king = (0.3, -1.0), (0.4, 1.1), (2.1, -0.9)
    target = tuple(k - m + w for k, m, w in zip(king, man, woman, strict=True))
    candidates = {"queen": (2.0, 1.2), "prince": (1.5, -1.1), "princess": (1.4, 1.0)}
    best = max(candidates, key=lambda w: cos(target, candidates[w]))
    assert glued("03_word_vectors")["analogy_best"].strip("'") == best == "queen"


def test_ch2_exercise_answers():
    weights = (-0.5, 1.5, 0.0)
    assert sum(w * v for w, v in zip(weights, (10, 5, 2), strict=True)) == pytest.approx(2.5)
    out = sum(w * v for w, v in zip(weights, (10, 20, 2), strict=True))
    assert out == pytest.approx(25) and out > max(10, 20, 2)   # more than any stored value


def test_ch3_exercise_answers():
    assert dot(VEC["vegetable"], VEC["carrot"]) == pytest.approx(2.15)
    assert dot(VEC["vegetable"], VEC["chair"]) == pytest.approx(-2.15)
    assert dot(VEC["fruit"], [5 * c for c in VEC["cherry"]]) == pytest.approx(3.775)
    assert dot(VEC["fruit"], (2.0, 2.0)) == pytest.approx(3.0)
    assert cos(VEC["fruit"], (2.0, 2.0)) == pytest.approx(0.9487, abs=1e-4)


def test_ch4_softmax_values():
    expected = loop_softmax([4.0, -1.0, 2.1])
    for i, e in enumerate(expected):
        assert glued_float("04_softmax_attention", f"sm{i}") == pytest.approx(e, rel=1e-12)
    # the four decimals printed by the source are right
    assert [round(e, 4) for e in expected] == [0.8648, 0.0058, 0.1294]


def test_ch4_fruit_attention_output_and_weights():
    keys = list(TABLE)
    w = loop_softmax([dot(VEC["fruit"], VEC[k]) for k in keys])
    out = sum(wi * TABLE[k] for wi, k in zip(w, keys, strict=True))
    g = "04_softmax_attention"
    assert glued_float(g, "fruit_out") == pytest.approx(out, rel=1e-12)
    for wi, k in zip(w, keys, strict=True):
        assert glued_float(g, f"w_{k}") == pytest.approx(wi, rel=1e-12)
    assert glued_float(g, "cold_out") == pytest.approx(10.0, abs=1e-6)
    assert glued_float(g, "hot_out") == pytest.approx(17 / 3, abs=0.05)


def test_ch4_scipy_uint8_softmax_is_wrong_as_the_chapter_says():
    assert glued_float("04_softmax_attention", "scipy_wrong") == pytest.approx(
        1 / (1 + math.exp(-1)), abs=1e-3)   # it computed softmax([1, 0]) after wrap-around


def test_ch4_exercise_answers():
    assert [round(v, 3) for v in loop_softmax([1.0, 0.0])] == [0.731, 0.269]
    assert [round(v, 3) for v in loop_softmax([1.0, 0.0, 0.0])] == [0.576, 0.212, 0.212]
    keys = list(TABLE)
    w = loop_softmax([dot(VEC["vegetable"], VEC[k]) for k in keys])
    assert [round(x, 3) for x in w] == [0.226, 0.750, 0.024]
    assert sum(wi * TABLE[k] for wi, k in zip(w, keys, strict=True)) == pytest.approx(
        6.058, abs=1e-3)
    # why the output is above the mean: apple's share. Handed to banana, with
    # chair's small weight unchanged, the output falls below the mean (review r1)
    without_apple = (w[1] + w[0]) * TABLE["banana"] + w[2] * TABLE["chair"]
    g = "04_softmax_attention"
    assert glued_float(g, "veg_out_banana") == pytest.approx(without_apple, rel=1e-12)
    assert without_apple < sum(TABLE.values()) / 3 < glued_float(g, "veg_out")


def test_word_scatter_labels_do_not_overlap():
    import matplotlib
    matplotlib.use("Agg")
    from attnbook.examples import ANALOGY, WORD_GROUPS, WORDS
    from attnbook.plots import new_figure, word_scatter
    target = ANALOGY["king"] - ANALOGY["man"] + ANALOGY["woman"]
    for vectors, groups, size in [(WORDS, WORD_GROUPS, (5.2, 4.6)),
                                  (dict(ANALOGY, **{"king−man+woman": target}), None, (6.0, 3.8))]:
        _, ax = new_figure(*size)
        word_scatter(vectors, groups, ax=ax)
        boxes = [t.get_window_extent() for t in ax.texts]
        assert len(boxes) == len(vectors)
        clashes = [(ax.texts[i].get_text(), ax.texts[j].get_text())
                   for i in range(len(boxes)) for j in range(i) if boxes[i].overlaps(boxes[j])]
        assert not clashes, f"overlapping labels: {clashes}"


def test_every_fruit_is_nearer_every_vegetable_than_any_furniture():
    """Chapter 3's claim, for distance, cosine and dot product (the XXᵀ heatmap)."""
    from attnbook.examples import WORD_GROUPS, WORDS
    fruit, veg, furniture = ([WORDS[w] for w in WORD_GROUPS[g]]
                             for g in ("fruit", "vegetable", "furniture"))
    for f in fruit:
        for v in veg:
            for u in furniture:
                for a, near, far in ((f, v, u), (v, f, u)):
                    assert math.dist(a, near) < math.dist(a, far)
                    assert cos(a, near) > cos(a, far)
                    assert dot(a, near) > dot(a, far)
