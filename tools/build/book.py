"""Build the HTML book strictly: python -m tools.build [--all] [--force].

- vendors KaTeX's stylesheet and fonts from npm (package.json /
  package-lock.json) into _vendor/, which _config.yml serves as
  _static/katex; the formulas are typeset at build time by KaTeX in Node.js
  (sphinxcontrib-katex), so pages run no maths script. Without Node.js it
  falls back to typesetting in the browser with a CDN stylesheet and says
  what is lost;
- runs `jupyter-book build -W -n --keep-going`, so any warning, unresolved
  reference or failing cell fails the build;
- executes the notebooks that the cache lacks one per core, longest first
  (jupyter-cache's executor function, _config.yml's settings), into the
  cache that jupyter-book reads (it would run them one by one), so the build
  itself finds every notebook cached; each kernel is forked from a server
  that has already imported torch and matplotlib (tools/build/warm_kernels.py);
- after a successful build with the same configuration, extensions and
  attnbook, Sphinx re-reads and re-writes only what changed (a prose edit is
  seen in seconds); otherwise, and with --all, every page is re-read and
  re-written, so every warning is raised again;
- --force (used in CI, and whenever CI=true) empties the cache first, so every
  notebook executes, and implies --all;
- on failure, names the notebook and the cell that failed.
- builds the Chinese edition (issue 18) into _build/html/zh/ from the same
  executed notebooks, beside the English build (start_chinese_edition /
  finish_chinese_edition); --english-only skips it.
- --translations builds nothing: it brings the Chinese catalogues up to date
  instead (`tools.build.translations`, `make translations`).
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import yaml

from tools.build import figures, warm_kernels
from tools.project import ROOT, book_config, config, toc_notebooks
from tools.sphinx.executed import ALL_DONE, READY_ENV, execution_order

VENDOR = ROOT / "_vendor"
#: Lists each notebook once the execution cache holds it, then "ok": the
#: Sphinx builds, started before, read a notebook once it is listed
#: (tools/sphinx/executed.py).
READY = ROOT / "_build" / ".notebooks-ready"
#: What a build without Node.js falls back to: KaTeX's stylesheet from a CDN,
#: with the formulas typeset in the reader's browser (sphinxcontrib-katex
#: ships the scripts).
KATEX_CDN_CSS = "https://cdn.jsdelivr.net/npm/katex@0.16.22/dist/katex.min.css"


def log(msg: str) -> None:
    print(f"[build] {msg}", flush=True)


def vendor_katex() -> bool:
    """Copy KaTeX's stylesheet and its WOFF2 fonts from node_modules into
    _vendor/katex (served as _static/katex); False without Node.js and npm.

    The formulas themselves are typeset while the book is built (KaTeX in
    Node.js, through sphinxcontrib-katex's prerendering), so no page runs a
    maths script. The stylesheet keeps only the WOFF2 source of each font:
    every browser the book supports reads WOFF2, and a browser fetches a
    font only when a page uses it."""
    target = VENDOR / "katex"
    source = ROOT / "node_modules" / "katex" / "dist"
    npm = shutil.which("npm")
    lock = ROOT / "package-lock.json"
    stamp = ROOT / "node_modules" / ".package-lock.json"
    if npm and (not source.is_dir() or not stamp.exists()
                or stamp.stat().st_mtime < lock.stat().st_mtime):
        log("installing pinned JavaScript assets with `npm ci`")
        done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                              cwd=ROOT, capture_output=True, text=True)
        if done.returncode:                 # npm's own lines only when it failed
            sys.stdout.write(done.stdout + done.stderr)
            raise SystemExit(f"[build] `npm ci` FAILED (exit {done.returncode})")
    if not source.is_dir() or not shutil.which("node"):
        return False
    css = target / "katex.min.css"
    if not css.exists() or css.stat().st_mtime < (source / "katex.min.css").stat().st_mtime:
        shutil.rmtree(target, ignore_errors=True)
        shutil.rmtree(VENDOR / "mathjax", ignore_errors=True)     # what older builds vendored
        (target / "fonts").mkdir(parents=True)
        for font in (source / "fonts").glob("*.woff2"):
            shutil.copy2(font, target / "fonts" / font.name)
        text = (source / "katex.min.css").read_text(encoding="utf-8")
        text = re.sub(r',url\(fonts/[^)]+\.(?:woff|ttf)\) format\("(?:woff|truetype)"\)', "", text)
        css.write_text(text, encoding="utf-8")
    return True


def attnbook_digest() -> str:
    """attnbook's source and the figures' Chinese text: what every
    notebook's outputs depend on besides its own code."""
    digest = hashlib.sha256(figures.catalogue_digest().encode())
    for path in sorted((ROOT / "attnbook").rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    return digest.hexdigest()


def prepare_figure_text() -> None:
    """Write the figures' Chinese catalogue (tools/build/figures.py) and name
    it in KERNEL_ENV, so every kernel draws each figure in both languages."""
    from attnbook.figure_text import CATALOGUE_ENV
    path = figures.write_catalogue()
    if path is None:
        KERNEL_ENV.pop(CATALOGUE_ENV, None)
        log("Noto Sans SC is missing (npm ci): the Chinese edition's figures will "
            "show their English text")
    else:
        KERNEL_ENV[CATALOGUE_ENV] = str(path)


def invalidate_cache_if_attnbook_changed() -> None:
    """The execution cache keys on a notebook's code only; when attnbook's
    source or the figures' translations change, outputs computed with the
    old ones are stale, so drop them."""
    prepare_figure_text()
    stamp = ROOT / "_build" / ".attnbook.sha256"
    cache = ROOT / "_build" / ".jupyter_cache"
    digest = attnbook_digest()
    if stamp.exists() and stamp.read_text() == digest:
        return
    if cache.exists():
        log("attnbook or figures.po changed since the last build: re-executing every notebook")
        shutil.rmtree(cache)
    stamp.parent.mkdir(exist_ok=True)
    stamp.write_text(digest)


def effective_config(offline: bool) -> Path:
    conf = book_config()
    if not offline:
        sphinx = conf["sphinx"]["config"]
        sphinx["katex_prerender"] = False
        sphinx["katex_css_path"] = KATEX_CDN_CSS
        sphinx["html_static_path"] = [p for p in sphinx["html_static_path"] if p != "_vendor"]
    out = ROOT / "_build" / "_config.effective.yml"
    out.parent.mkdir(exist_ok=True)
    out.write_text("# generated by tools/build/book.py from _config.yml; do not edit\n"
                   + yaml.safe_dump(conf, sort_keys=False))
    return out


#: Chinese catalogues that every page reads, not only their own page: the
#: theme's strings (tools/sphinx/i18n_ui.py) and the bibliography's notes,
#: which the citations' tooltips show.
EVERY_PAGES_CATALOGUES = ("sphinx", "theme", "booktheme", "references")


def build_inputs(config_path: Path) -> str:
    """A digest of what every page depends on besides its own source: the
    effective configuration, the TOC, the catalogues every page reads, the
    local extensions, templates and static files (Sphinx does not re-copy a
    changed stylesheet on an update), and attnbook (whose change re-executes
    every notebook without touching them)."""
    digest = hashlib.sha256(attnbook_digest().encode())
    files = [config_path, ROOT / "_toc.yml", ROOT / "references.bib",
             *(ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / f"{name}.po"
               for name in EVERY_PAGES_CATALOGUES),
             *sorted((ROOT / "tools" / "sphinx").glob("*.py")),
             *sorted(p for p in (ROOT / "_templates").rglob("*") if p.is_file()),
             *sorted(p for p in (ROOT / "_assets").rglob("*") if p.is_file())]
    for path in files:
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    return digest.hexdigest()


#: What every kernel the build (and tests/nbrun.py) starts finds in its
#: environment. ATTNBOOK_STATIC: explorers render every frame and no widget.
#: One thread each for OpenBLAS and torch: two kernels run at once on two
#: cores, and with two threads each they fought over them (the 13 notebooks
#: took 34.0 and 33.9 s, against 30.5 and 31.6 s with one thread, measured
#: side by side). Numbers shown are rounded, so readers' multi-threaded runs
#: show the same.
KERNEL_ENV = {"ATTNBOOK_STATIC": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "MKL_NUM_THREADS": "1"}


@contextlib.contextmanager
def kernel_environment(extra: dict[str, str] | None = None):
    """Set KERNEL_ENV, then `extra`, in os.environ (which a new kernel
    inherits), and restore it afterwards."""
    wanted = {**KERNEL_ENV, **(extra or {})}
    saved = {name: os.environ.get(name) for name in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def execute_notebook(nb, cwd: Path, env: dict[str, str] | None = None):
    """Execute the notebook `nb` in place in a fresh kernel, as the build does
    (jupyter-cache's executor function, with _config.yml's `execute`
    settings and KERNEL_ENV; the kernel comes from the warm-kernel server
    that SOCKET_ENV names, if it names one); returns jupyter-cache's ExecutionResult
    (`.err`: the exception of a failed cell, or None; `.time`: seconds).
    The kernel is stopped at once when the last cell is done (nbclient's
    default asks it to shut down and waits, about 0.4 s per notebook).
    `env`: variables set for this kernel on top of KERNEL_ENV (the tests
    emulate other machines with them)."""
    from jupyter_cache.executors.utils import single_nb_execution
    settings = config()["execute"]
    with kernel_environment(env):
        return single_nb_execution(nb, cwd=str(cwd), timeout=settings["timeout"],
                                   allow_errors=settings["allow_errors"], meta_override=True,
                                   shutdown_kernel="immediate",
                                   **warm_kernels.client_options())


def is_removed(cell) -> bool:
    """A code cell tagged `remove-cell`: not shown in the book at all."""
    return cell.cell_type == "code" and "remove-cell" in cell.metadata.get("tags", [])


def isolate_removed_cells(nb) -> dict[int, str]:
    """Make every removed cell of `nb` run in a copy of the globals: it can read
    the visible cells' names and glue, but nothing it binds reaches later
    cells. A reader who types the visible code never runs the removed cells,
    so a visible cell that needs a name only a removed cell defines fails
    here with a NameError, as it would for the reader. Returns {index:
    original source}, for `restore_sources`."""
    saved = {}
    for i, cell in enumerate(nb.cells):
        if is_removed(cell):
            saved[i] = cell.source
            cell.source = f"exec({cell.source!r}, dict(globals()))"
    return saved


def restore_sources(nb, saved: dict[int, str]) -> None:
    for i, source in saved.items():
        nb.cells[i].source = source


def describe_failure(nb, where: str, err) -> str:
    """'<where>, code cell i of n (cell id ...) failed:' and the error."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    failed = next((i for i, c in enumerate(code)
                   if any(o.output_type == "error" for o in c.get("outputs", []))), None)
    cell = (f"code cell {failed + 1} of {len(code)} (cell id {code[failed].get('id')})"
            if failed is not None else "a cell")
    return f"{where}, {cell} failed:\n" + ANSI.sub("", str(err))


def code_hashes() -> dict[str, str]:
    """{notebook: digest of its kernel and code cells}, what the cache keys on."""
    hashes = {}
    for path in toc_notebooks():
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = [c["source"] for c in nb["cells"] if c["cell_type"] == "code"]
        kernel = nb.get("metadata", {}).get("kernelspec", {}).get("name")
        hashes[str(path.relative_to(ROOT))] = hashlib.sha256(
            json.dumps([kernel, code]).encode()).hexdigest()
    return hashes


def _execute(path: Path):
    """Worker: execute one notebook file, its removed cells isolated
    (`isolate_removed_cells`); (path, executed notebook with its own sources,
    seconds, what failed or None)."""
    import nbformat
    nb = nbformat.read(path, as_version=4)
    saved = isolate_removed_cells(nb)
    result = execute_notebook(nb, path.parent)
    restore_sources(nb, saved)
    failure = (None if result.err is None else
               describe_failure(nb, str(path.relative_to(ROOT)), result.err))
    return path, nb, result.time, failure


def pre_execute(cache_path: Path, cached=lambda path: None) -> list[str]:
    """Execute the notebooks the cache lacks, one per core and the longest
    first, and cache them as jupyter-book's cache mode would. This beat
    jupyter-cache's own "local-parallel" executor on a clean cache, side by
    side on this 2-core machine: 133 s against 149 s, then 87 s against 131 s
    (that executor hands out notebooks in pairs, in TOC order, so a long one
    can run last, alone). Removed cells run isolated (`isolate_removed_cells`),
    as for a reader; the tests read these executions from the cache rather
    than executing the chapters again (tests/nbrun.py). Calls `cached(path)`
    as each notebook enters the cache. Returns what failed, one message per
    notebook, each naming the cell; a notebook that fails is left out of the
    cache."""
    # Fast path: the code of every notebook is as when it was last cached here
    # (the stamp lives inside the cache, so emptying the cache drops it too);
    # asking jupyter-cache costs about a second of imports and validation.
    stamp = cache_path / "code-hashes.json"
    hashes = code_hashes()
    if stamp.exists() and json.loads(stamp.read_text()) == hashes:
        return []
    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    failed = []
    # the server imports torch and the rest while jupyter-cache is asked
    with kernel_environment(), warm_kernels.serving():
        cache = get_cache(str(cache_path))
        todo = []
        for path in toc_notebooks():
            try:
                cache.match_cache_notebook(nbformat.read(path, as_version=4))
            except KeyError:
                todo.append(path)
            else:
                cached(path)
        if todo:
            workers = os.cpu_count() or 1
            log(f"executing {len(todo)} notebook(s), {workers} at a time")
            start = time.perf_counter()
            with ProcessPoolExecutor(workers) as pool:
                runs = [pool.submit(_execute, path) for path in execution_order(todo)]
                for run in as_completed(runs):
                    path, nb, seconds, failure = run.result()
                    if failure:
                        failed.append(failure)
                        continue
                    record = cache.add_nb_to_project(str(path))
                    cache.cache_notebook_bundle(CacheBundleIn(
                        nb, record.uri, data={"execution_seconds": seconds}),
                        check_validity=False, overwrite=True)
                    cached(path)
            log(f"executed in {time.perf_counter() - start:.0f} s")
    if not failed:
        stamp.write_text(json.dumps(hashes, indent=1))
    return failed


#: jupyter-book's command line, without jsonschema's optional IRI format checker:
#: importing it (rfc3987_syntax builds 38 lark grammars) took 9.4 of the 24.6
#: profiled seconds of a prose rebuild, and jupyter-book validates no IRI.
#: Once the build has run, the exit handlers (KaTeX's server, logging) run
#: and the process ends without tearing down its objects one by one (the
#: doctrees, the environment, torch from autodoc): that took 1.2 s after a
#: full build of the Chinese edition, the last thing the build waits for.
JUPYTER_BOOK = """\
import atexit, os, sys
sys.modules['rfc3987_syntax'] = None
from jupyter_book.cli.main import main
sys.argv[0] = 'jupyter-book'
try:
    main()
    status = 0
except SystemExit as stop:
    status = stop.code if isinstance(stop.code, int) else stop.code is not None
    if isinstance(stop.code, str):
        print(stop.code, file=sys.stderr)
atexit._run_exitfuncs()
sys.stdout.flush()
sys.stderr.flush()
os._exit(status)
"""

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def explain_failure(output: str) -> None:
    """Name the notebook and the cell behind a failed execution, once each."""
    import nbformat
    text = ANSI.sub("", output)
    notebooks = dict.fromkeys(re.findall(r"^(\S+\.ipynb): WARNING: Executing notebook failed",
                                         text, re.M))
    cells = re.findall(r"An error occurred while executing the following cell:\n-+\n(.*?)\n-+\n"
                       r"(.*?)(?=\n\S+Error: |\Z)\n(\S+(?:Error|Exception)\S*: [^\n]*)",
                       text, re.S)
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        for source, _, error in dict.fromkeys(cells):
            code = [c for c in nb.cells if c.cell_type == "code"]
            index = next((i for i, c in enumerate(code) if c.source.strip() == source.strip()),
                         None)
            if index is None:
                continue
            log(f"FAILED: {Path(path).relative_to(ROOT)}, code cell {index + 1} of {len(code)} "
                f"(cell id {code[index].get('id')}):")
            for line in source.splitlines():
                log("    " + line)
            log(f"  raised {error.strip()}")
    if not notebooks:
        for line in text.splitlines():
            if ("WARNING" in line or "ERROR" in line) and "[IPKernelApp]" not in line:
                log("FAILED: " + line.strip())


# --- the Chinese edition (issue 18) ----------------------------------------

ZH_BUILD = ROOT / "_build" / "zh"          # jupyter-book writes ZH_BUILD/_build/html
ZH_HTML = ROOT / "_build" / "html" / "zh"  # where readers find it
#: The book's title and authors in the Chinese edition (intro.po translates
#: the first page's heading the same way).
ZH_TITLE = "一步一步理解注意力"
ZH_AUTHOR = f"《{ZH_TITLE}》编写组"
#: Settings that are UI strings rather than catalogue entries (the book_*
#: ones are tools/sphinx/i18n_ui.py's).
ZH_SETTINGS = {
    "language": "zh_CN",
    "book_language_switch": ["English", "../", "en"],
    "nb_code_prompt_show": "显示代码单元",
    "nb_code_prompt_hide": "隐藏代码单元",
    # sphinx-togglebutton reads its hints at start-up, before any catalogue
    "togglebutton_hint": "点击展开",
    "togglebutton_hint_hide": "点击收起",
    "book_toggle_label": "展开或收起内容",
    "book_solution_title": "{exercise} 的解答",
    "book_citation_words": {"sep": "、", "sep2": " 和 ", "last_sep": " 和 ", "other": " 等",
                            "author_year_sep": "，",
                            # between two works: "[Elhage 等，2021；Olsson 等，2022]"
                            "bracket_sep": "；"},
}
ZH_THEME = {"search_bar_text": "搜索本书……"}
ZH_HTML_OPTIONS = {"extra_footer": "本书每一页上的每个数字都由该页的代码算出。"}


def chinese_edition_config(english: Path) -> Path:
    """The Chinese edition's config: the English effective config with
    language zh_CN, the book's Chinese title and authors, the UI strings that are settings, the reverse language
    switch, and the execution cache given as an absolute path, so that the
    build (from another output folder) reads the notebooks the English
    build executed instead of executing them again."""
    config = yaml.safe_load(english.read_text())
    config["title"], config["author"] = ZH_TITLE, ZH_AUTHOR
    config["execute"]["cache"] = str(ROOT / config["execute"]["cache"])
    config["html"].update(ZH_HTML_OPTIONS)
    sphinx = config["sphinx"]["config"]
    sphinx.update(ZH_SETTINGS)
    sphinx["html_theme_options"] = {**sphinx.get("html_theme_options", {}), **ZH_THEME}
    out = ROOT / "_build" / "_config.zh.yml"
    out.write_text("# generated by tools/build/book.py (build_chinese_edition); do not edit\n"
                   + yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    return out


def start_sphinx(config: Path, output: Path, log_path: Path,
                 everything: bool) -> subprocess.Popen:
    """Start the strict jupyter-book (Sphinx) build of `config` into
    `output`/_build/html, in the background, its log in `log_path`.
    With READY_ENV set, the build reads the pages that are not notebooks,
    then waits for the file it names before it reads a notebook
    (tools/sphinx/executed.py)."""
    cmd = [sys.executable, "-c", JUPYTER_BOOK, "build", str(ROOT), "--config", str(config),
           "--path-output", str(output), "-W", "-n", "--keep-going",
           *(["--all"] if everything else [])]
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_file = log_path.open("w")
    log_file.write("$ " + " ".join(cmd[:2]) + " <JUPYTER_BOOK> " + " ".join(cmd[3:]) + "\n")
    log_file.flush()
    proc = subprocess.Popen(cmd, cwd=ROOT, text=True, stdout=log_file,
                            stderr=subprocess.STDOUT)
    proc.started = time.perf_counter()
    proc.log = log_path
    return proc


def start_chinese_edition(english_config: Path, everything: bool = True) -> subprocess.Popen:
    """Start the strict build of the Chinese edition (into _build/zh/) beside
    the English one: Sphinx uses one core, so on two cores both builds take
    about the time of one. Its log goes to _build/zh/build.log; finish with
    finish_chinese_edition."""
    return start_sphinx(chinese_edition_config(english_config), ZH_BUILD,
                        ZH_BUILD / "build.log", everything)


def finish_chinese_edition(proc: subprocess.Popen) -> int:
    """Wait for the Chinese build, then put it in _build/html/zh/; returns its
    exit code. It fails if the build executed a notebook (it must not)."""
    returncode = proc.wait()
    output = (ZH_BUILD / "build.log").read_text()
    executed = re.findall(r"^.*Executing notebook.*$", ANSI.sub("", output), re.M)
    if returncode != 0 or executed:
        sys.stdout.write(output)
        if executed:
            log("the Chinese build executed notebooks, which it must not: "
                + "; ".join(executed[:3]))
        else:
            explain_failure(output)
        log(f"the strict Chinese build FAILED after {time.perf_counter() - proc.started:.0f} s")
        return returncode or 1
    shutil.rmtree(ZH_HTML, ignore_errors=True)
    shutil.copytree(ZH_BUILD / "_build" / "html", ZH_HTML)
    log(f"Chinese edition built strictly in {time.perf_counter() - proc.started:.0f} s "
        f"(log: {(ZH_BUILD / 'build.log').relative_to(ROOT)}): {(ZH_HTML / 'index.html').as_uri()}")
    return 0


def build_chinese_edition(english_config: Path) -> int:
    """Build the Chinese edition alone (the notebooks must be cached)."""
    return finish_chinese_edition(start_chinese_edition(english_config))

def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.build",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true",
                        help="re-read and re-write every page (the tests and CI do this)")
    parser.add_argument("--force", action="store_true",
                        help="execute every notebook, ignoring the cache (CI does this); "
                             "implies --all")
    parser.add_argument("--english-only", action="store_true",
                        help="skip the Chinese edition (_build/html/zh)")
    parser.add_argument("--translations", action="store_true",
                        help="build nothing: update the Chinese catalogues in locales/ "
                             "after an English edit (make translations)")
    args = parser.parse_args()
    if args.translations:
        from tools.build import translations
        return translations.main()
    force = args.force or os.environ.get("CI") == "true"
    offline = vendor_katex()
    if not offline:
        log("WARNING: Node.js/npm is not available, so the formulas cannot be typeset "
            "while the book is built. They are typeset in the reader's browser instead, "
            "with KaTeX's stylesheet and fonts from a CDN: equations render only while "
            "the reader is online and has JavaScript on, and the browser tests will fail. "
            "Install Node.js/npm and run `make book` again for an offline book.")
    os.environ["ATTNBOOK_STATIC"] = "1"   # kernels inherit it: explorers render every frame
    invalidate_cache_if_attnbook_changed()
    config_path = effective_config(offline)
    start = time.perf_counter()
    cache_path = ROOT / config()["execute"]["cache"]
    if force:
        shutil.rmtree(cache_path, ignore_errors=True)
    shutil.rmtree(ROOT / "_build" / "html" / "reports", ignore_errors=True)
    # Only a successful build with the same inputs may be updated in place.
    stamp = ROOT / "_build" / ".last-good-build"
    inputs = build_inputs(config_path)
    everything = args.all or force or not stamp.exists() or stamp.read_text() != inputs
    stamp.unlink(missing_ok=True)
    # Both editions start now and read each notebook as soon as it has
    # executed (tools/sphinx/executed.py).
    READY.write_text("")
    os.environ[READY_ENV] = str(READY)
    builds = [start_sphinx(config_path, ROOT, ROOT / "_build" / "build.log", everything)]
    if not args.english_only:
        builds.append(start_chinese_edition(config_path, everything))

    def tell(line: str) -> None:
        with READY.open("a", encoding="utf-8") as f:     # one write: a whole line
            f.write(line + "\n")
    failed = pre_execute(cache_path, lambda path: tell(path.relative_to(ROOT).as_posix()))
    if failed:
        tell("failed")
        for proc in builds:
            proc.terminate()
            proc.wait()
        for message in failed:
            for line in message.splitlines():
                log("FAILED: " + line)
        log(f"the strict build FAILED: {len(failed)} notebook(s) did not execute")
        return 1
    tell(ALL_DONE)
    english = builds[0]
    returncode = english.wait()
    output = english.log.read_text()
    elapsed = time.perf_counter() - start
    if returncode != 0:
        sys.stdout.write(output)     # the whole log only when something failed
        for proc in builds[1:]:
            proc.wait()
        explain_failure(output)
        log(f"the strict build FAILED after {elapsed:.0f} s (see the messages above)")
        return returncode
    index = ROOT / "_build" / "html" / "index.html"
    log(f"English edition built strictly in {elapsed:.0f} s "
        f"(log: {english.log.relative_to(ROOT)})")
    if not args.english_only:
        status = finish_chinese_edition(builds[1])
        if status:
            return status
        log(f"both editions built in {time.perf_counter() - start:.0f} s")
    stamp.write_text(inputs)        # both builds passed: the next may update in place
    log(f"open {index.as_uri()}")
    if not offline:
        log("reminder: this build loads KaTeX's stylesheet from a CDN (Node.js/npm was missing)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
