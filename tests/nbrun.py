"""Execute a chapter once per test process, as the build does
(`tools.build_book.execute_notebook`), and read what it glued.

Cells tagged `remove-cell` are not shown in the book, so a reader who types
the visible code never runs them. They may only glue numbers into the prose
(tests/test_truth.py checks that statically), and here they run in a
namespace of their own: a visible cell that uses a name only a removed cell
defines fails with a NameError, as it would for the reader.
"""
from __future__ import annotations

import functools
import os
import shutil
from pathlib import Path

import nbformat
from nbclient.exceptions import CellExecutionError

from tools.build_book import execute_notebook
from tools.project import ROOT


def is_removed(cell) -> bool:
    return cell.cell_type == "code" and "remove-cell" in cell.metadata.get("tags", [])


def isolate_removed_cells(nb: nbformat.NotebookNode) -> None:
    """Make every removed cell run in a copy of the globals: it can read the
    visible cells' names and glue, but nothing it binds reaches later cells."""
    for cell in nb.cells:
        if is_removed(cell):
            cell.source = f"exec({cell.source!r}, dict(globals()))"


def run(nb: nbformat.NotebookNode, where: str, cwd: Path,
        env: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """Execute `nb` in place in a fresh kernel as the build does (with `env`
    on top of the build's kernel environment); on failure, name the cell."""
    isolate_removed_cells(nb)
    err = execute_notebook(nb, cwd, env).err
    if err is not None:
        code = [c for c in nb.cells if c.cell_type == "code"]
        failed = next((i for i, c in enumerate(code)
                       if any(o.output_type == "error" for o in c.get("outputs", []))), None)
        cell = (f"code cell {failed + 1} of {len(code)} (cell id {code[failed].get('id')})"
                if failed is not None else "a cell")
        raise CellExecutionError(f"{where}, {cell} failed:\n{err}",
                                 getattr(err, "ename", type(err).__name__),
                                 getattr(err, "evalue", str(err)))
    return nb


@functools.lru_cache(maxsize=None)
def executed(name: str) -> nbformat.NotebookNode:
    """The chapter `chapters/<name>.ipynb`, executed in a fresh python3 kernel
    once per test run: under pytest-xdist the first worker that asks executes
    it and saves it in _build/.test-executed/<run>/, and the others read that."""
    path = ROOT / "chapters" / f"{name}.ipynb"
    where = f"chapters/{name}.ipynb"
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run_id:
        return run(nbformat.read(path, as_version=4), where, path.parent)
    from filelock import FileLock
    shared = ROOT / "_build" / ".test-executed"
    for old in shared.glob("*"):
        if old.name != run_id:                       # earlier runs' notebooks
            shutil.rmtree(old, ignore_errors=True)
    saved = shared / run_id / f"{name}.ipynb"
    saved.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{saved}.lock"):
        if saved.exists():
            return nbformat.read(saved, as_version=4)
        nb = run(nbformat.read(path, as_version=4), where, path.parent)
        nbformat.write(nb, saved)
        return nb


def glued(name: str) -> dict[str, str]:
    """{glue name: its text/plain value} from the executed chapter."""
    values = {}
    for cell in executed(name).cells:
        for out in cell.get("outputs", []):
            record = out.get("metadata", {}).get("scrapbook", {})
            if record.get("name"):
                values[record["name"]] = out["data"][record.get("mime_prefix", "") + "text/plain"]
    return values


def glued_float(name: str, key: str) -> float:
    return float(glued(name)[key])
