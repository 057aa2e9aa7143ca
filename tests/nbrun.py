"""Execute a chapter once per test process and read what it glued.

Cells tagged `remove-cell` are not shown in the book, so a reader who types
the visible code never runs them. They may only glue numbers into the prose
(tests/test_truth.py checks that statically), and here they run in a
namespace of their own: a visible cell that uses a name only a removed cell
defines fails with a NameError, as it would for the reader.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

import nbformat
import yaml
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
CELL_TIMEOUT = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"]


def is_removed(cell) -> bool:
    return cell.cell_type == "code" and "remove-cell" in cell.metadata.get("tags", [])


def isolate_removed_cells(nb: nbformat.NotebookNode) -> None:
    """Make every removed cell run in a copy of the globals: it can read the
    visible cells' names and glue, but nothing it binds reaches later cells."""
    for cell in nb.cells:
        if is_removed(cell):
            cell.source = f"exec({cell.source!r}, dict(globals()))"


def run(nb: nbformat.NotebookNode, where: str, cwd: Path) -> nbformat.NotebookNode:
    """Execute `nb` in place in a fresh python3 kernel; on failure, name the cell."""
    isolate_removed_cells(nb)
    try:
        NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                       resources={"metadata": {"path": str(cwd)}}).execute(
                           env={**os.environ, "ATTNBOOK_STATIC": "1"})   # as in the book
    except CellExecutionError as err:
        code = [c for c in nb.cells if c.cell_type == "code"]
        failed = next((i for i, c in enumerate(code)
                       if any(o.output_type == "error" for o in c.get("outputs", []))), None)
        cell = (f"code cell {failed + 1} of {len(code)} (cell id {code[failed].get('id')})"
                if failed is not None else "a cell")
        raise CellExecutionError(f"{where}, {cell} failed:\n{err}",
                                 err.ename, err.evalue) from None
    return nb


@functools.lru_cache(maxsize=None)
def executed(name: str) -> nbformat.NotebookNode:
    """The chapter `chapters/<name>.ipynb`, executed in a fresh python3 kernel."""
    path = ROOT / "chapters" / f"{name}.ipynb"
    return run(nbformat.read(path, as_version=4), f"chapters/{name}.ipynb", path.parent)


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
