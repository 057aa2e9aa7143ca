"""The chapters that train, iterate or measure random weights say the same on
every machine.

Training amplifies last-bit differences: another CPU (ATen's vectorised
kernels follow the CPU capability), another BLAS kernel (MKL picks by
processor) or another thread count gives a different trained model. So the
chapters may only claim what holds for every such outcome, and they assert
each claim in a hidden cell. Here those chapters run again under emulated
machines and with other seeds, and every assert must still hold.

OPENBLAS_CORETYPE is left as the machine sets it: on some processors it is
set so that OpenBLAS computes correctly at all.
"""
from __future__ import annotations

import re

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError
from nbrun import run

from tools.project import ROOT

#: Numerical set-ups besides the machine's own (the build runs that one).
#: With two threads, OpenMP's waiting threads sleep instead of spinning
#: (OMP_WAIT_POLICY=PASSIVE, which changes no arithmetic): the other
#: pytest-xdist worker keeps the second core busy, and spinning for it took
#: chapter 15's run from 8.6 s to 14.6 s, measured beside a busy loop.
SETUPS = {
    "native": {},
    "aten-default+mkl-compatible": {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"},
    "aten-avx2+mkl-avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "two-threads": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
                    "OPENBLAS_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"},
}

#: The `seed = 0` line of chapters 13, 15 and 16, which seeds the models and their
#: data (and chapter 15's samples).
SEED_LINE = re.compile(r"^seed = 0\b.*$", re.M)


def with_seed(nb: nbformat.NotebookNode, seed: int) -> nbformat.NotebookNode:
    cells = [c for c in nb.cells if c.cell_type == "code" and SEED_LINE.search(c.source)]
    assert len(cells) == 1, "the chapter must set `seed = 0` in exactly one code cell"
    cells[0].source = SEED_LINE.sub(f"seed = {seed}", cells[0].source)
    return nb


#: A first cell that stops the kernel from drawing figures as PNG.
NO_FIGURES = "get_ipython().display_formatter.formatters['image/png'].enabled = False"


def execute(name: str, setup: str, seed: int | None = None) -> None:
    path = ROOT / "chapters" / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    if seed is not None:
        nb = with_seed(nb, seed)
    # The claims are asserted from numbers, not pictures: no figure is drawn
    # (about a sixth of each run), and explorers build widgets instead of frames.
    nb.cells.insert(0, nbformat.v4.new_code_cell(NO_FIGURES))
    env = {"ATTNBOOK_STATIC": "0", **SETUPS[setup]}
    try:
        run(nb, f"chapters/{name}.ipynb under {setup} {env}, seed {seed}", path.parent, env)
    except CellExecutionError as err:
        pytest.fail(str(err), pytrace=False)


#: Seed 0 (the book's) under every other set-up; seeds 1 and 2 natively and
#: under the set-up furthest from it. The native seed-0 run is the build's.
CASES = ([(setup, 0) for setup in SETUPS if setup != "native"]
         + [(setup, seed) for setup in ("native", "aten-default+mkl-compatible")
            for seed in (1, 2)])


@pytest.mark.slow
@pytest.mark.parametrize("setup, seed", CASES, ids=[f"{a}-seed{b}" for a, b in CASES])
def test_chapter_13_claims_hold_on_other_machines_and_seeds(setup, seed):
    execute("13_attention_that_learns", setup, seed)


@pytest.mark.slow
@pytest.mark.parametrize("setup, seed", CASES, ids=[f"{a}-seed{b}" for a, b in CASES])
def test_chapter_16_claims_hold_on_other_machines_and_seeds(setup, seed):
    """The phase change, the heads the scores pick and the ablation's effect."""
    execute("16_induction_head", setup, seed)


@pytest.mark.slow
@pytest.mark.parametrize("setup", [s for s in SETUPS if s != "native"])
def test_chapter_8_training_claims_hold_on_other_machines(setup):
    execute("08_kernel_regression", setup)


@pytest.mark.slow
@pytest.mark.parametrize("setup, seed", CASES, ids=[f"{a}-seed{b}" for a, b in CASES])
def test_chapter_15_claims_hold_on_other_machines_and_seeds(setup, seed):
    """Chapter 15 trains a language model: its grammatical fractions, the loss
    just above the language's entropy, agreement across attractors, the best
    head's weight, and batched generation equal to generation alone."""
    execute("15_tiny_language_model", setup, seed)


@pytest.mark.parametrize("name", ["13_attention_that_learns", "15_tiny_language_model",
                                  "16_induction_head"])
def test_the_seed_line_is_found_and_replaced(name):
    nb = nbformat.read(ROOT / "chapters" / f"{name}.ipynb", as_version=4)
    changed = with_seed(nb, 7)
    assert any(c.source.startswith("seed = 7") or "\nseed = 7" in c.source
               for c in changed.cells if c.cell_type == "code")


@pytest.mark.slow
@pytest.mark.parametrize("setup", [s for s in SETUPS if s != "native"])
def test_chapter_14_claims_from_random_initialisation_hold_on_other_machines(setup):
    """Chapter 14 trains nothing, but its gradient comparisons and residual-stream
    sizes come from random weights in float32; they must not depend on rounding."""
    execute("14_the_whole_block", setup)
