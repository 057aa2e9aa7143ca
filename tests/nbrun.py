"""The chapters as the build executed them, and a way to execute one anew.

`executed(name)` reads a chapter from the build's execution cache: the book
is built once per test run (`build_once`, shared with the `built_book`
fixture), and the tests read what that build computed instead of executing
every chapter a second time. `run` executes a notebook in a fresh kernel as
the build does, for tests that change it or its environment
(tests/test_platforms.py, tests/test_truth.py).

Cells tagged `remove-cell` are not shown in the book, so a reader who types
the visible code never runs them. They may only glue numbers into the prose
(tests/test_truth.py checks that statically), and the build runs them in a
namespace of their own (`tools.build.book.isolate_removed_cells`): a
visible cell that uses a name only a removed cell defines fails with a
NameError, as it would for the reader.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient.exceptions import CellExecutionError

from tools.build import warm_kernels
from tools.build.book import (
    describe_failure,
    execute_notebook,
    isolate_removed_cells,
    kernel_environment,
)
from tools.project import ROOT, config

#: Warm-kernel servers (tools/build/warm_kernels.py, as the build uses), one
#: per environment the tests ask for, kept until this test process ends.
_SERVERS = contextlib.ExitStack()
atexit.register(_SERVERS.close)


@functools.cache
def _server(env: frozenset) -> str:
    """The socket of a server started in the kernels' environment `env`."""
    with kernel_environment(dict(env)):
        return _SERVERS.enter_context(warm_kernels.serving(announce=False))


def run(nb: nbformat.NotebookNode, where: str, cwd: Path,
        env: dict[str, str] | None = None) -> nbformat.NotebookNode:
    """Execute `nb` in place in a fresh kernel as the build does (with `env`
    on top of the build's kernel environment, forked like the build's from
    a server started in that same environment); on failure, name the cell."""
    isolate_removed_cells(nb)
    env = dict(env or {})
    env[warm_kernels.SOCKET_ENV] = _server(frozenset(env.items()))
    err = execute_notebook(nb, cwd, env).err
    if err is not None:
        raise CellExecutionError(describe_failure(nb, where, err),
                                 getattr(err, "ename", type(err).__name__),
                                 getattr(err, "evalue", str(err)))
    return nb


def made_once(name: str, run_id: str, make) -> Path:
    """_build/.once/<run_id>/<name>/, filled by `make(folder)` once per test run
    however many pytest-xdist workers ask (a file lock makes the others wait);
    earlier runs' folders are removed."""
    from filelock import FileLock
    base = ROOT / "_build" / ".once"
    folder, done = base / run_id / name, base / run_id / f"{name}.done"
    base.mkdir(parents=True, exist_ok=True)
    with FileLock(str(base / f"{name}.lock")):
        if not done.exists():
            for old in base.glob("*"):
                if old.is_dir() and old.name != run_id:
                    shutil.rmtree(old, ignore_errors=True)
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            make(folder)
            done.touch()
    return folder


def build_once(run_id: str | None = None) -> tuple[bool, str]:
    """Build the book strictly (`python -m tools.build --all`) once per test run,
    even if several pytest-xdist workers ask (`made_once`); (it passed, its output)."""
    run_id = run_id or os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}"

    def build(folder: Path) -> None:
        proc = subprocess.run([sys.executable, "-m", "tools.build", "--all"],
                              cwd=ROOT, capture_output=True, text=True)
        (folder / "result").write_text(str(proc.returncode) + "\n" + proc.stdout + proc.stderr)
    returncode, _, output = (made_once("build", run_id, build) / "result").read_text() \
        .partition("\n")
    return returncode == "0", output


@functools.lru_cache(maxsize=None)
def executed(name: str) -> nbformat.NotebookNode:
    """The chapter `chapters/<name>.ipynb` as this test run's build executed it."""
    from jupyter_cache import get_cache
    ok, output = build_once()
    path = ROOT / "chapters" / f"{name}.ipynb"
    cache = get_cache(str(ROOT / config()["execute"]["cache"]))
    try:
        _, nb = cache.merge_match_into_notebook(nbformat.read(path, as_version=4))
    except KeyError:
        failed = [line for line in output.splitlines() if "FAILED" in line]
        raise CellExecutionError(
            f"chapters/{name}.ipynb was not executed by the build"
            + (":\n" + "\n".join(failed[-40:]) if failed else
               " (it passed: is the chapter in _toc.yml?)" if ok else
               ":\n" + "\n".join(output.splitlines()[-40:])), "BuildError", "") from None
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
