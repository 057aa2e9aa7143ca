"""Sphinx extension: build while the notebooks are still executing.

tools/build/book.py starts both editions' Sphinx processes before it
executes the notebooks, with `READY_ENV` naming a file to which it adds a
line for each notebook once the execution cache holds it (the notebook's
path from the book's root), then "ok" when every notebook is cached, or
"failed". Meanwhile each Sphinx process starts up, reads the pages that are
not notebooks (the API page's autodoc is the longest), then each notebook as
soon as it has executed, in the order the build executes them
(`execution_order`), so that reading overlaps the execution instead of
following it.

A notebook is parsed only once the file names it, so myst-nb finds it in
the cache and never executes it itself. Without `READY_ENV` (a plain
`jupyter-book build`), nothing changes.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from sphinx.errors import SphinxError

#: Names the file that lists the notebooks executed so far.
READY_ENV = "ATTNBOOK_NOTEBOOKS_READY"
#: The file's last line once every notebook is in the cache.
ALL_DONE = "ok"
#: The process that started this build (tools.build, which writes the file).
_PARENT = os.getppid()


def execution_order(paths: list[Path]) -> list[Path]:
    """The order tools/build/book.py executes notebooks in, two at a time:
    the longest (roughly: the largest file) first, so that no long one runs
    last and alone."""
    return sorted(paths, key=lambda p: -p.stat().st_size)


def _source(app, docname: str) -> Path:
    return Path(app.env.doc2path(docname))


def _reading_order(app, env, docnames: list[str]) -> None:
    """The pages that are not notebooks first, then the notebooks in
    `execution_order`."""
    if not os.environ.get(READY_ENV):
        return
    paths = {d: _source(app, d) for d in docnames}
    notebooks = [p for p in paths.values() if p.suffix == ".ipynb"]
    rank = {p: i for i, p in enumerate(execution_order(notebooks))}
    docnames.sort(key=lambda d: rank.get(paths[d], -1))      # the other pages keep their order


def _executed(ready: Path) -> tuple[set[str], str | None]:
    """(notebooks listed so far, "ok"/"failed" or None); a line still
    being written (no newline yet) does not count."""
    lines = ready.read_text(encoding="utf-8").split("\n")[:-1] if ready.exists() else []
    ends = [line for line in lines if line in (ALL_DONE, "failed")]
    return set(lines), (ends[0] if ends else None)


def _wait_for_execution(app, docname: str, source: list[str]) -> None:
    ready = os.environ.get(READY_ENV)
    path = _source(app, docname)
    if not ready or path.suffix != ".ipynb":
        return
    name = path.relative_to(app.srcdir).as_posix()
    while True:
        listed, end = _executed(Path(ready))
        if name in listed or end == ALL_DONE:
            return
        if end is not None:
            raise SphinxError(f"{name} did not execute (tools.build says {end!r})")
        if os.getppid() != _PARENT:         # tools.build stopped without a word
            raise SphinxError("the build that started this one has stopped")
        time.sleep(0.02)


def setup(app):
    app.connect("env-before-read-docs", _reading_order)
    app.connect("source-read", _wait_for_execution)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
