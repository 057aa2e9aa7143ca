"""`make bench`: what the book costs to build, to run and to read, measured.

Prints one table and writes it to _build/bench.json. Every figure is measured
in this run, on this machine; ratios compare two things measured side by side
so that they hold on a noisy shared machine. Nothing is asserted: a target
that is missed is printed as missed.

    python tools/bench.py               # everything (about 10 minutes on 2 cores)
    python tools/bench.py --skip-test   # without the `make test` run
    python tools/bench.py --quick       # no builds and no `make test`

The full run rebuilds _build/ from scratch (it ends with a built book).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import yaml
from build_book import book_config, execute_notebook

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
sys.path.insert(0, str(ROOT / "tests"))   # reuse the test suite's explorer factory
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
PROSE_EDIT = ROOT / "chapters" / "02_soft_lookup.ipynb"
EXECUTED = BUILD / "bench_executed"    # the notebooks bench_execution ran, with outputs

ROWS: list[dict] = []


def row(measure: str, value: float, unit: str, *, reference: str = "", ratio: float | None = None,
        target: str = "", holds: bool | None = None) -> None:
    ROWS.append(dict(measure=measure, value=round(value, 4), unit=unit, reference=reference,
                     ratio=None if ratio is None else round(ratio, 3), target=target,
                     holds=holds))
    print(f"  {measure}: {value:.2f} {unit}" + (f"  ({reference})" if reference else ""),
          flush=True)


def env_without_ci() -> dict:
    env = dict(os.environ)
    env.pop("CI", None)            # build_book.py forces execution when CI=true
    return env


def run_build(*extra: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "build_book.py"), *extra],
                          cwd=ROOT, env=env_without_ci(), capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"bench: the build failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return elapsed


# --- building -------------------------------------------------------------

def bench_builds() -> dict:
    print("\nBuilding (strict: -W -n --keep-going):", flush=True)
    for d in ("html", ".jupyter_cache", "jupyter_execute", ".doctrees"):
        shutil.rmtree(BUILD / d, ignore_errors=True)
    clean = run_build("--force")
    row("clean build, execution forced", clean, "s", target="<= 60 s", holds=clean <= 60)
    shutil.rmtree(BUILD / ".jupyter_cache", ignore_errors=True)
    cold_cache = run_build()          # fills the execution cache
    row("clean build, empty cache (what `make book` does first)", cold_cache, "s")
    original = PROSE_EDIT.read_text(encoding="utf-8")
    nb = json.loads(original)
    first_md = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    first_md["source"][-1] = first_md["source"][-1].rstrip("\n") + " (An edited line.)"
    try:
        PROSE_EDIT.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n",
                              encoding="utf-8")
        prose = run_build()
    finally:
        PROSE_EDIT.write_text(original, encoding="utf-8")
    run_build()                       # put the built page back in step with the source
    row("rebuild after editing one prose line (cache hit)", prose, "s",
        reference=f"{prose / clean:.2f} x the clean build", ratio=prose / clean,
        target="<= 10 s", holds=prose <= 10)
    return {"clean": clean, "prose": prose}


def sphinx_only() -> float:
    """The same strict build with execution off, over the notebooks
    bench_execution ran (outputs included), in a scratch copy of the book:
    Sphinx's own time."""
    with tempfile.TemporaryDirectory() as tmp:
        book = Path(tmp)
        for name in ["_toc.yml", "references.bib", *[p.name for p in ROOT.glob("*.md")]]:
            shutil.copy(ROOT / name, book / name)
        (book / "README.md").unlink(missing_ok=True)
        for d in ("_assets", "_vendor", "_templates"):
            if (ROOT / d).exists():
                (book / d).symlink_to(ROOT / d)
        (book / "chapters").mkdir()
        for nb in CHAPTERS:
            shutil.copy(EXECUTED / nb.name, book / "chapters" / nb.name)
        config = book_config()
        config["execute"]["execute_notebooks"] = "off"
        (book / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        jb = Path(sys.executable).with_name("jupyter-book")
        start = time.perf_counter()
        proc = subprocess.run([str(jb), "build", str(book), "-W", "-n", "--keep-going", "--all"],
                              cwd=book, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if proc.returncode:
            sys.exit(f"bench: the execution-off build failed:\n{proc.stdout[-3000:]}")
    return elapsed


# --- executing ------------------------------------------------------------

def execute(path: str) -> tuple[str, float]:
    """Execute one chapter as the build does and save it under EXECUTED; its
    kernel's stderr (a warning about TCP transport) goes to /dev/null."""
    import nbformat
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        _, nb, seconds, failed = execute_notebook(Path(path))
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    if failed:
        sys.exit(f"bench: {path} failed to execute; run `make book` to see why")
    EXECUTED.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, EXECUTED / Path(path).name)
    return Path(path).stem, seconds


def bench_execution() -> dict:
    print("\nExecuting each chapter in a fresh kernel:", flush=True)
    times = {}
    start = time.perf_counter()
    for nb in CHAPTERS:
        name, seconds = execute(str(nb))
        times[name] = seconds
        row(f"execute {name}", seconds, "s", target="<= 20 s", holds=seconds <= 20)
    serial = time.perf_counter() - start
    row("execute all chapters, one at a time", serial, "s")
    longest_first = sorted(CHAPTERS, key=lambda p: -times[p.stem])
    start = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(execute, map(str, longest_first)))
    parallel = time.perf_counter() - start
    row("execute all chapters, two at a time", parallel, "s",
        reference=f"{serial / parallel:.2f} x faster than one at a time", ratio=parallel / serial)
    return {"serial": serial, "parallel": parallel, "each": times}


# --- running: explorers, import, attention --------------------------------

def timed(fn, n=50):
    times = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), float(np.percentile(times, 95))


def side_by_side_ms(f, f_args, g, g_args, rounds=4, n=10) -> tuple[float, float]:
    """Median ms per call of f and of g over `rounds` alternating blocks of n
    calls each (after one warm-up block each), so that drift in the machine's
    speed affects both alike while each block runs warm."""
    tf, tg = [], []
    for r in range(rounds + 1):
        for fn, args, out in ((f, f_args, tf), (g, g_args, tg)):
            for _ in range(n):
                t = time.perf_counter()
                fn(*args)
                if r:                          # round 0 is the warm-up
                    out.append((time.perf_counter() - t) * 1000)
    return statistics.median(tf), statistics.median(tg)


def bench_explorers() -> None:
    from test_explorers import KINDS, make

    from attnbook import explorers as ex
    print("\nExplorer latency per slider move, 50 moves (naive: 20 moves):", flush=True)
    for kind in KINDS:
        e = make(kind)
        e.widget()
        n = len(e.values)

        def live(i, e=e, n=n):
            e._live_frames.clear()   # a value's first visit: no frame kept from before
            e.slider.value = (e.index + 1 + i % 2) % n

        def naive(i, kind=kind, n=n):
            fresh = make(kind)       # a new figure every move, fully laid out and drawn
            fresh.show((i + 1) % n)
            ex._png_full_redraw(fresh.figure)

        live_med, live_p95 = timed(live)
        naive_med, naive_p95 = timed(naive, n=20)
        target = dict(target="median <= 30 ms", holds=live_med <= 30) if kind == "dk" else {}
        row(f"explorer {kind}: live median", live_med, "ms",
            reference=f"naive redraw {naive_med:.1f} ms", ratio=live_med / naive_med, **target)
        row(f"explorer {kind}: live p95", live_p95, "ms",
            reference=f"naive redraw {naive_p95:.1f} ms", ratio=live_p95 / naive_p95)


def bench_import() -> None:
    code = "import sys,time;t=time.perf_counter();import attnbook;" \
           "print(time.perf_counter()-t,'torch' in sys.modules)"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.split() for _ in range(5)]
    best = min(float(r[0]) for r in runs)
    row("import attnbook (best of 5)", best, "s", reference=f"torch imported: {runs[0][1]}",
        target="<= 0.3 s", holds=best <= 0.3)


def bench_attention_vs_torch() -> None:
    import torch

    from attnbook import scaled_dot_product_attention
    print("\nscaled_dot_product_attention, n_q = n_k = 1024, d_k = d_v = 64 (median of 40 "
          f"calls in alternating blocks of 10; torch on {torch.get_num_threads()} threads):",
          flush=True)
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        Q, K, V = (rng.normal(size=(1024, 64)).astype(dtype) for _ in range(3))
        Qt, Kt, Vt = (torch.from_numpy(a) for a in (Q, K, V))
        ours, theirs = side_by_side_ms(scaled_dot_product_attention, (Q, K, V),
                                       torch.nn.functional.scaled_dot_product_attention,
                                       (Qt, Kt, Vt))
        row(f"attnbook attention, {np.dtype(dtype).name} input", ours, "ms",
            reference=f"torch {theirs:.2f} ms; attnbook computes in float64",
            ratio=ours / theirs)


# --- reading: page weight -------------------------------------------------

def bench_pages() -> None:
    html = BUILD / "html"
    if not html.exists():
        print("\n(no _build/html: run `make book` to measure page weights)")
        return
    pages = sorted((html / "chapters").glob("*.html"))
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        print("\n(no Chromium: page weight counts the HTML and its images only)")
        for page in pages:
            text = page.read_text(errors="replace")
            images = sum(p.stat().st_size for p in (html / "_images").glob("*") if p.name in text)
            total = (page.stat().st_size + images) / 1e6
            row(f"page {page.stem} (HTML + images)", total, "MB", target="<= 3 MB",
                holds=total <= 3)
        return
    import functools
    import http.server
    import threading

    from conftest import CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(html)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    print("\nPage weight: everything Chromium loads for the page, nothing cached:", flush=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for page_path in pages:
            context = browser.new_context()
            page = context.new_page()
            loaded: list[int] = []
            page.on("requestfinished",
                    lambda r, loaded=loaded: loaded.append(r.sizes()["responseBodySize"]))
            page.goto(f"{base}/chapters/{page_path.name}", wait_until="networkidle")
            html_mb = page_path.stat().st_size / 1e6
            total = sum(loaded) / 1e6
            row(f"page {page_path.stem}", total, "MB",
                reference=f"HTML {html_mb:.2f} MB + {len(loaded) - 1} assets",
                target="<= 3 MB", holds=total <= 3)
            context.close()
        browser.close()
    server.shutdown()


def bench_make_test() -> None:
    print("\nRunning `make test`:", flush=True)
    start = time.perf_counter()
    proc = subprocess.run(["make", "test"], cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    summary = (proc.stdout.strip().splitlines() or ["?"])[-1].strip("= ")
    row("make test", elapsed, "s", reference=f"exit {proc.returncode}: {summary}",
        target="<= 10 min", holds=elapsed <= 600)


def print_table() -> None:
    print("\n" + "=" * 100)
    print(f"{'measure':<52} {'value':>10}  {'ratio':>6}  {'target':<16} {'holds':<5}")
    print("-" * 100)
    for r in ROWS:
        value = f"{r['value']:.2f} {r['unit']}"
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}"
        holds = "" if r["holds"] is None else ("yes" if r["holds"] else "NO")
        print(f"{r['measure']:<52} {value:>10}  {ratio:>6}  {r['target']:<16} {holds:<5}")
        if r["reference"]:
            print(f"{'':<4}{r['reference']}")
    print("=" * 100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="no builds, no `make test`")
    parser.add_argument("--skip-test", action="store_true", help="no `make test`")
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    if not args.quick:
        builds = bench_builds()
        executions = bench_execution()
        sphinx = sphinx_only()
        row("strict build with execution off (Sphinx only)", sphinx, "s")
        for how, seconds in (("one", executions["serial"]), ("two", executions["parallel"])):
            budget = seconds + sphinx
            row(f"clean build / (execution {how} at a time + Sphinx only)",
                builds["clean"] / budget, "x",
                reference=f"{builds['clean']:.1f} s / ({seconds:.1f} s + {sphinx:.1f} s)",
                ratio=builds["clean"] / budget,
                **(dict(target="<= 1.3 x", holds=builds["clean"] / budget <= 1.3)
                   if how == "one" else {}))
    bench_import()
    bench_explorers()
    bench_attention_vs_torch()
    bench_pages()
    if not (args.quick or args.skip_test):
        bench_make_test()
    print_table()
    BUILD.mkdir(exist_ok=True)
    out = BUILD / "bench.json"
    out.write_text(json.dumps({"started": started, "machine": {
        "cpus": os.cpu_count(), "python": sys.version.split()[0]}, "rows": ROWS}, indent=1))
    print(f"written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
