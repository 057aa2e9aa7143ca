"""Plots and explorers check their arguments: a bad one gets an error that
names it, raised before matplotlib or numpy fail somewhere deep inside, and
nothing is silently dropped (a y_train longer than x_train, say)."""
from __future__ import annotations

import numpy as np
import pytest
from badinput import assert_clear_error, ids

import attnbook as ab
from attnbook import explorers as ex
from attnbook import figure_text, plots
from attnbook.examples import WORDS

x_tr, y_tr, x_te, y_te = ab.toy_regression_data(np.random.default_rng(0), n_train=10, n_test=8)
rng = np.random.default_rng(0)
Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 2))
TOKENS = ["a", "b", "c"]
Z = np.zeros((2, 2))


def temperature(**kw):
    return ex.explore_temperature([1.0, 2.0], ["a", "b"], **kw)


# (description, call, exception type, fragments the message must contain)
CASES = [
    # explore_bandwidth (the class 4)
    ("y_train longer than x_train (was silently cut)",
     lambda: ex.explore_bandwidth(x_tr, np.append(y_tr, 1.0), x_te),
     ValueError, ["y_train", "(10,)", "(11,)"]),
    ("y_train shorter than x_train", lambda: ex.explore_bandwidth(x_tr, y_tr[:-1], x_te),
     ValueError, ["y_train", "(10,)", "(9,)"]),
    ("y_test of another length", lambda: ex.explore_bandwidth(x_tr, y_tr, x_te, y_te[:-1]),
     ValueError, ["y_test", "(8,)", "(7,)"]),
    ("x_train with two dimensions",
     lambda: ex.explore_bandwidth(np.zeros((2, 5)), np.zeros((2, 5)), x_te),
     ValueError, ["x_train", "(n_train,)", "(2, 5)"]),
    ("NaN in y_train", lambda: ex.explore_bandwidth(x_tr, np.full(10, np.nan), x_te),
     ValueError, ["y_train", "NaN"]),
    ("a bandwidth of 0", lambda: ex.explore_bandwidth(x_tr, y_tr, x_te, bandwidths=(0.0, 1.0)),
     ValueError, ["bandwidths[0]", "> 0"]),
    ("no bandwidths", lambda: ex.explore_bandwidth(x_tr, y_tr, x_te, bandwidths=()),
     ValueError, ["bandwidths", "at least one"]),
    ("bandwidth index out of range", lambda: ex.explore_bandwidth(x_tr, y_tr, x_te, index=50),
     ValueError, ["index", "[0, 10]", "50"]),
    ("negative bandwidth index (was the last value)",
     lambda: ex.explore_bandwidth(x_tr, y_tr, x_te, index=-1),
     ValueError, ["index", "[0, 10]", "-1"]),
    ("float bandwidth index", lambda: ex.explore_bandwidth(x_tr, y_tr, x_te, index=1.5),
     TypeError, ["index", "integer", "1.5"]),
    # explore_dk
    ("d_k = 0", lambda: ex.explore_dk(d_ks=(0, 1, 2)), ValueError, ["d_ks[0]", "positive", "0"]),
    ("d_k as a float", lambda: ex.explore_dk(d_ks=(1.5, 2)), TypeError, ["d_ks[0]", "1.5"]),
    ("no d_k", lambda: ex.explore_dk(d_ks=()), ValueError, ["d_ks", "at least one"]),
    ("d_k index out of range", lambda: ex.explore_dk(index=20), ValueError, ["index", "[0, 10]"]),
    ("n_show beyond the queries drawn", lambda: ex.explore_dk(n_show=(400, 6)),
     ValueError, ["n_show[0]", "200", "400"]),
    ("n_show of 0 keys", lambda: ex.explore_dk(n_show=(4, 0)), ValueError, ["n_show[1]", "0"]),
    ("a string seed", lambda: ex.explore_dk(seed="a"), TypeError, ["seed", "str"]),
    # explore_temperature
    ("a temperature of 0", lambda: temperature(temperatures=(0.0, 1.0)),
     ValueError, ["temperatures[0]", "> 0"]),
    ("a negative temperature", lambda: temperature(temperatures=(1.0, -1.0)),
     ValueError, ["temperatures[1]", "-1.0"]),
    ("no temperatures", lambda: temperature(temperatures=()),
     ValueError, ["temperatures", "at least one"]),
    ("NaN in scores", lambda: ex.explore_temperature([np.nan, 2.0], ["a", "b"]),
     ValueError, ["scores", "NaN"]),
    ("NaN in values", lambda: temperature(values=[np.nan, 1.0]), ValueError, ["values", "NaN"]),
    ("temperature index as a float", lambda: temperature(index=1.5),
     TypeError, ["index", "1.5"]),
    # explore_attention and Explorer.show
    ("attention index out of range", lambda: ex.explore_attention(TOKENS, Q, K, V, index=5),
     ValueError, ["index", "[0, 2]", "5"]),
    ("attention index as a float", lambda: ex.explore_attention(TOKENS, Q, K, V, index=0.5),
     TypeError, ["index", "0.5"]),
    ("value_labels of the wrong length",
     lambda: ex.explore_attention(TOKENS, Q, K, V, value_labels=["x"]),
     ValueError, ["value_labels", "d_v = 2", "1"]),
    ("show a float index", lambda: temperature().show(0.5), TypeError, ["index", "float"]),
    ("show a negative index", lambda: temperature().show(-1), ValueError, ["index", "-1"]),
    # plots
    ("heatmap of an empty matrix", lambda: plots.heatmap(np.zeros((0, 3))),
     ValueError, ["weights", "(0, 3)"]),
    ("heatmap with vmin above vmax", lambda: plots.heatmap(Z, vmin=1.0, vmax=0.0),
     ValueError, ["vmin", "vmax", "1.0", "0.0"]),
    ("heatmap with a NaN vmin", lambda: plots.heatmap(Z, vmin=np.nan), ValueError,
     ["vmin", "finite", "nan"]),
    # issue 38: a bool is not a colour bound (vmin=True drew from 1)
    ("heatmap with vmin=True", lambda: plots.heatmap(Z, vmin=True), TypeError,
     ["vmin", "bool True"]),
    ("heatmap with vmax=np.True_", lambda: plots.heatmap(Z, vmax=np.True_), TypeError,
     ["vmax", "True"]),
    ("heatmap with a string vmin", lambda: plots.heatmap(Z, vmin="0"), TypeError, ["vmin", "'0'"]),
    ("heatmap with vmin equal to vmax", lambda: plots.heatmap(Z, vmin=0.5, vmax=0.5), ValueError,
     ["vmin must be less than vmax", "0.5"]),
    ("heatmap_grid with vmin=True", lambda: plots.heatmap_grid([Z], vmin=True), TypeError,
     ["vmin", "True"]),
    ("heatmap with colorbar='no'", lambda: plots.heatmap(Z, colorbar="no"), TypeError,
     ["colorbar must be True or False", "'no'"]),
    ("heatmap with annotate=1", lambda: plots.heatmap(Z, annotate=1), TypeError,
     ["annotate must be True or False", "int 1"]),
    ("heatmap with a title that is a number", lambda: plots.heatmap(Z, title=3), TypeError,
     ["title must be a string", "int 3"]),
    ("heatmap with a fmt that is a number (even without annotating)",
     lambda: plots.heatmap(Z, fmt=3, annotate=False), TypeError, ["fmt", "int 3"]),
    ("heatmap with an unknown cmap", lambda: plots.heatmap(Z, cmap="nope"), ValueError,
     ["cmap", "'nope'"]),
    # explorers
    ("explore_heads of no heads (used to blame index)",
     lambda: ex.explore_heads(np.zeros((0, 2, 2, 2)), ["a", "b"]), ValueError,
     ["weights", "(0, 2, 2, 2)", "at least one layer"]),
    ("explore_induction with a score above 1",
     lambda: ex.explore_induction([0], np.full((1, 4, 4), 0.25), 2, [1.5], [1.0]), ValueError,
     ["scores", "[0, 1]", "1.5"]),
    ("explore_induction with a negative loss",
     lambda: ex.explore_induction([0], np.full((1, 4, 4), 0.25), 2, [0.5], [-1.0]), ValueError,
     ["losses", "-1.0"]),
    ("explore_induction with weights above 1",
     lambda: ex.explore_induction([0], np.full((1, 4, 4), 2.0), 2, [0.5], [1.0]), ValueError,
     ["weights", "[0, 1]", "2.0"]),
    ("Explorer with an update that is not callable",
     lambda: ex.Explorer("x", [1], ["a"], plots.new_figure()[0], 3), TypeError,
     ["update must be a function", "int 3"]),
    ("Explorer with a figure that is a string",
     lambda: ex.Explorer("x", [1], ["a"], "fig", lambda i: None), TypeError,
     ["figure must be a matplotlib Figure", "str"]),
    ("Explorer with a name that is a number",
     lambda: ex.Explorer(3, [1], ["a"], plots.new_figure()[0], lambda i: None), TypeError,
     ["name must be a string", "int 3"]),
    # figure_text
    ("translate of a number", lambda: figure_text.translate(3, {}), TypeError, ["text", "int 3"]),
    ("translate with a list of messages", lambda: figure_text.translate("a", []), TypeError,
     ["messages must be a dict", "list"]),
    ("translate with a translation that is no string",
     lambda: figure_text.translate("a 1", {"a {}": 3}), TypeError, ["messages", "'a {}'", "int"]),
    ("template of None", lambda: figure_text.template(None), TypeError, ["text", "NoneType"]),
    ("texts of a number", lambda: figure_text.texts(3), TypeError, ["fig", "Figure", "int"]),
    ("translated with families a string",
     lambda: figure_text.translated(plots.new_figure()[0], {}, "Noto").__enter__(), TypeError,
     ["families", "'Noto'"]),
    ("figure_bundle with a render that returns None",
     lambda: figure_text.figure_bundle(plots.new_figure()[0], lambda f: None), TypeError,
     ["render(fig) must return PNG bytes", "NoneType"]),
    ("heatmap with a fmt for integers", lambda: plots.heatmap(Z, fmt="{:d}"),
     ValueError, ["fmt", "{:d}"]),
    ("annotating a huge heatmap", lambda: plots.heatmap(np.zeros((200, 200)), annotate=True),
     ValueError, ["annotate", "40000", "ANNOTATE_LIMIT"]),
    ("heatmap_grid with ncols 0 (was treated as one row)",
     lambda: plots.heatmap_grid([Z], ncols=0), ValueError, ["ncols", "positive", "0"]),
    ("heatmap_grid with ncols -1", lambda: plots.heatmap_grid([Z], ncols=-1), ValueError, ["ncols"]),
    ("heatmap_grid with a float ncols", lambda: plots.heatmap_grid([Z], ncols=1.5),
     TypeError, ["ncols", "1.5"]),
    ("heatmap_grid of matrices of different shapes",
     lambda: plots.heatmap_grid([Z, np.zeros((3, 3))]), ValueError, ["matrices", "(2, 2)", "(3, 3)"]),
    ("heatmap_grid with a 3-D entry", lambda: plots.heatmap_grid([np.zeros((2, 2, 2))]),
     ValueError, ["matrices[0]", "(2, 2, 2)"]),
    ("heatmap_grid of None", lambda: plots.heatmap_grid(None), TypeError, ["matrices", "NoneType"]),
    ("heatmap_grid of all-NaN matrices fitted to the data",
     lambda: plots.heatmap_grid([np.full((2, 2), np.nan)], vmin=None),
     ValueError, ["matrices", "no finite value", "vmin"]),
    ("word_scatter with a group naming absent words",
     lambda: plots.word_scatter(dict(WORDS), {"g": ("apple", "nope")}),
     ValueError, ["groups['g']", "nope"]),
    ("word_scatter with an arrow to an absent word",
     lambda: plots.word_scatter(dict(WORDS), arrows_from_origin=["nope"]),
     ValueError, ["arrows_from_origin", "nope"]),
    ("word_scatter with a string as a group",
     lambda: plots.word_scatter(dict(WORDS), {"g": "apple"}), TypeError, ["groups['g']", "apple"]),
    ("word_scatter of a list", lambda: plots.word_scatter([[1, 2]]), TypeError, ["vectors", "list"]),
    ("word_scatter with NaN", lambda: plots.word_scatter({"a": [np.nan, 1.0]}),
     ValueError, ["vectors['a']", "NaN"]),
    ("new_figure of height 0", lambda: plots.new_figure(3, 0), ValueError, ["height", "> 0"]),
]


@pytest.mark.parametrize("description,call,error,fragments", CASES, ids=ids(CASES))
def test_bad_input_to_plots_and_explorers_gets_a_clear_error(description, call, error, fragments):
    assert_clear_error(description, call, error, fragments)


@pytest.mark.parametrize("n,labels", [(12, False), (50, False), (31, True), (4096, False)])
def test_large_heatmaps_get_a_thinned_set_of_ticks(n, labels):
    names = [f"t{i}" for i in range(n)] if labels else None
    fig = plots.heatmap(np.zeros((n, 3)), row_labels=names)
    ax = fig.axes[0]
    ticks = list(ax.get_yticks())
    limit = plots.MAX_TICKS if labels else plots.MAX_INDEX_TICKS
    assert len(ticks) <= limit and ticks[0] == 0
    if n <= limit:
        assert ticks == list(range(n))
    step = int(ticks[1] - ticks[0])
    shown = [t.get_text() for t in ax.get_yticklabels()]
    expected = [f"t{i}" if labels else str(i) for i in range(0, n, step)]
    assert shown == expected       # each tick keeps its own row's label
