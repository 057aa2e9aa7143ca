"""Execute a chapter once per test process and read what it glued."""
from __future__ import annotations

import functools
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
CELL_TIMEOUT = 120  # seconds, as in _config.yml


@functools.lru_cache(maxsize=None)
def executed(name: str) -> nbformat.NotebookNode:
    """The chapter `chapters/<name>.ipynb`, executed in a fresh python3 kernel."""
    path = ROOT / "chapters" / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    try:
        NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    except CellExecutionError as err:
        code = [c for c in nb.cells if c.cell_type == "code"]
        failed = next((i for i, c in enumerate(code)
                       if any(o.output_type == "error" for o in c.get("outputs", []))), None)
        where = (f"code cell {failed + 1} of {len(code)} (cell id {code[failed].get('id')})"
                 if failed is not None else "a cell")
        raise CellExecutionError(f"chapters/{name}.ipynb, {where} failed:\n{err}",
                                 err.ename, err.evalue) from None
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
