"""What a reader finds by tab completion: every module's __all__, its dir(),
the package's short paths, and the API page, in agreement."""
from __future__ import annotations

import importlib
import re
import subprocess
import sys

import pytest

from tools.project import ROOT

MODULES = sorted({p.stem for p in (ROOT / "attnbook").glob("*.py")}
                 | {p.parent.name for p in (ROOT / "attnbook").glob("*/__init__.py")}
                 - {"__init__"})
PUBLIC = [m for m in MODULES if not m.startswith("_")]


def _public_dir(module) -> list[str]:
    return sorted(n for n in dir(module) if not n.startswith("_"))


@pytest.mark.parametrize("name", ["", *PUBLIC])
def test_all_is_exactly_what_dir_shows_and_every_name_resolves(name):
    module = importlib.import_module("attnbook" + (f".{name}" if name else ""))
    names = module.__all__
    assert len(names) == len(set(names)), f"{module.__name__}.__all__ repeats a name"
    assert not [n for n in names if n.startswith("_")], "private names in __all__"
    assert _public_dir(module) == sorted(names), (
        f"dir({module.__name__}) shows {set(_public_dir(module)) - set(names)} beyond "
        f"__all__ and misses {set(names) - set(_public_dir(module))}")
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{module.__name__}.__all__ names what it does not hold: {missing}"


def test_dir_of_nn_offers_the_later_layers_and_hides_torch_and_helpers():
    import attnbook.nn
    shown = dir(attnbook.nn)
    for name in ("CausalSelfAttention", "KVCache", "Block", "TinyGPT",
                 "GroupedQueryAttention", "rope", "valid_lens_mask"):
        assert name in shown
    for name in ("torch", "math", "nn", "importlib", "positive_int", "widened"):
        assert name not in shown


def _run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_dir_of_the_package_lists_the_modules_and_short_paths_without_importing_torch():
    out = _run("import sys, attnbook; d = dir(attnbook); "
               "print('torch' in sys.modules, 'matplotlib' in sys.modules); print(d)")
    loaded, shown = out.splitlines()
    assert loaded == "False False"
    for name in [*PUBLIC, "TinyGPT", "multi_head_attention", "CausalSelfAttention",
                 "scaled_dot_product_attention", "Attention"]:
        assert repr(name) in shown, name


LAZY = ["multi_head_attention", "MultiHead", "TinyGPT", "Block", "GroupedQueryAttention",
        "CausalSelfAttention", "KVCache", "causal_heads", "rope", "DotProductAttention",
        "AdditiveAttention", "NWKernelRegression", "split_heads", "merge_heads"]


def test_short_paths_are_the_names_of_multihead_and_nn_except_numpys_twins():
    import attnbook
    import attnbook.multihead
    import attnbook.nn
    lazy = {n for n in attnbook.__all__ if n not in PUBLIC} - {
        n for m in ("core", "kernel", "scoring", "positions", "blockwise")
        for n in importlib.import_module(f"attnbook.{m}").__all__}
    expected = set(attnbook.multihead.__all__) | set(attnbook.nn.__all__)
    assert lazy == expected - {"masked_softmax", "valid_lens_mask"}
    assert set(LAZY) == lazy
    assert attnbook.masked_softmax is importlib.import_module("attnbook.core").masked_softmax
    assert attnbook.valid_lens_mask is importlib.import_module("attnbook.core").valid_lens_mask


@pytest.mark.parametrize("name", LAZY)
def test_each_short_path_works_first_in_a_fresh_interpreter(name):
    """The same in every chapter: whatever was imported before, or nothing."""
    out = _run(f"import attnbook, importlib; obj = attnbook.{name}; "
               "home = importlib.import_module(obj.__module__); "
               f"print(getattr(home, {name!r}) is obj, obj is getattr(attnbook.nn, "
               f"{name!r}, None) or obj is getattr(attnbook.multihead, {name!r}, None))")
    assert out.split() == ["True", "True"]


def test_an_unknown_name_is_an_attribute_error_naming_it():
    import attnbook
    import attnbook.nn
    for module in (attnbook, attnbook.nn):
        with pytest.raises(AttributeError, match="no attribute 'Tinygpt'"):
            module.Tinygpt  # noqa: B018


# --- the API page -----------------------------------------------------------

def _api_sections() -> dict[str, set[str]]:
    """api.md's automodule directives: module -> the names it excludes."""
    api = (ROOT / "api.md").read_text(encoding="utf-8")
    sections = {}
    for block in re.findall(r"```\{eval-rst\}\n(.*?)```", api, re.S):
        module = re.search(r"\.\. automodule:: attnbook\.(\w+)", block).group(1)
        excluded = re.search(r":exclude-members:(.*?)(?:\n   :|\Z)", block, re.S)
        sections[module] = {n.strip() for n in excluded.group(1).split(",")} \
            if excluded else set()
        assert ":members:" in block, module
    return sections


def test_api_page_documents_each_name_of_all_once_at_its_home():
    api = (ROOT / "api.md").read_text(encoding="utf-8")
    sections = _api_sections()
    assert set(sections) == set(PUBLIC)
    homes: dict[str, str] = {}
    for name, excluded in sections.items():
        module = importlib.import_module(f"attnbook.{name}")
        assert excluded <= set(module.__all__), f"{name} excludes what it does not offer"
        for attr in excluded:     # a re-export: documented where it is defined
            obj = getattr(module, attr)
            home = obj.__module__.removeprefix("attnbook.")
            assert home != name and home in sections and attr not in sections[home] \
                and attr in importlib.import_module(obj.__module__).__all__, \
                f"attnbook.{name}.{attr} is excluded but not documented in attnbook.{home}"
            assert f"`attnbook.{name}.{attr}`" in api, (
                f"api.md does not say that attnbook.{name}.{attr} is reachable")
        for attr in set(module.__all__) - excluded:
            homes.setdefault(id(getattr(module, attr)), f"{name}.{attr}")
    import attnbook
    for attr in attnbook.__all__:
        if attr not in PUBLIC:
            assert id(getattr(attnbook, attr)) in homes, (
                f"attnbook.{attr} is not documented in any section of api.md")


def test_the_api_surface_check_sees_a_name_missing_from_all():
    class Module:
        __all__ = ["a"]
        a, b = 1, 2
    assert _public_dir(Module) != sorted(Module.__all__)
