"""`make bench`: what the book costs to build, run and read, against its budgets.

Prints one table, each budget with the measured figure and "MISSED" where it
is not met, and writes it to _build/bench.json. Every figure is measured in
this run; ratios compare two things measured side by side, so that they hold
on a noisy shared machine. The builds run in a scratch copy of the book (the
work tree, with its uncommitted changes); the work tree's source is never
edited. `make test` runs in the work tree, as CI runs it (CI=true).

    python -m tools.bench               # everything (about 10 minutes on 2 cores)
    python -m tools.bench --skip-test   # without the `make test` run
    python -m tools.bench --quick       # no builds and no `make test`; a few pages on a phone
    python -m tools.bench.phone [--quick]   # only the page on a phone (tools/bench/phone.py)

The page on a phone: LCP and bytes before first paint of every page of both
editions under Lighthouse's mobile profile, served gzip-compressed
(tools/bench/phone.py); --quick measures chapters 1, 5, 11 and 16 and the
Chinese chapter 16.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

from tools.project import CHROMIUM_ARGS, ROOT, config, find_chromium, serve

ROWS: list[dict] = []
PROSE_EDIT = "chapters/02_soft_lookup.ipynb"
SENTENCE = "This sentence was added by the bench."


def row(measure: str, value: float | None, unit: str, *, limit: float | None = None,
        target: str = "", note: str = "") -> None:
    """Record one figure; `limit` (same unit) makes it a budget: met if value <= limit."""
    holds = None if limit is None or value is None else value <= limit
    ROWS.append(dict(measure=measure, value=value, unit=unit, note=note,
                     target=target or (f"<= {limit:g} {unit}" if limit is not None else ""),
                     holds=holds))
    shown = "not measured" if value is None else f"{value:.2f} {unit}"
    print(f"  {measure}: {shown}" + (f"  ({note})" if note else ""), flush=True)


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20)[-1]


# --- building, in a scratch copy of the book --------------------------------

def scratch_book(where: Path) -> Path:
    """Copy the work tree's files (tracked, and untracked but not ignored) to
    `where`; node_modules is linked, the execution cache is not copied."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, where / name)
    if (ROOT / "node_modules").is_dir():
        (where / "node_modules").symlink_to(ROOT / "node_modules")
    return where


def build(book: Path, *args: str) -> tuple[float, str]:
    """Run the strict build in `book`; (seconds, its output). Exits if it fails."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}   # CI=true forces execution
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "tools.build", *args], cwd=book, env=env,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"bench: the build failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return elapsed, proc.stdout


def execution_seconds(book: Path) -> dict[str, float]:
    """{notebook: seconds its execution took}, as jupyter-cache recorded it."""
    from jupyter_cache import get_cache
    cache = get_cache(str(book / config()["execute"]["cache"]))
    times = {}
    for record in cache.list_project_records():
        cached = cache.get_cached_project_nb(record.pk)
        if cached is not None:
            times[Path(record.uri).stem] = cached.data["execution_seconds"]
    return times


def bench_builds(book: Path) -> None:
    print("\nBuilding a scratch copy of the book (strict: -W -n --keep-going):", flush=True)
    clean, output = build(book, "--force")
    row("clean strict build of both editions, execution forced", clean, "s", limit=40)
    executed = next((float(line.split()[-2]) for line in output.splitlines()
                     if line.startswith("[build] executed in")), float("nan"))
    each = execution_seconds(book)
    for name, seconds in sorted(each.items()):
        row(f"execute {name}", seconds, "s", limit=20, note="two at a time on 2 cores")
    row("  of which executing (two at a time)", executed, "s",
        note=f"the notebooks one after another: {sum(each.values()):.1f} s")
    row("  of which the rest (Sphinx, vendoring)", clean - executed, "s")
    zh = book / "_build" / "html" / "zh"
    if not zh.is_dir():
        row("clean build of both editions / English only", None, "x", limit=1.5,
            note="not built yet: the build makes no _build/html/zh/")
    elif "--english-only" not in build(book, "--help")[1]:
        row("clean build of both editions / English only", None, "x", limit=1.5,
            note="_build/html/zh/ is built, but tools.build has no --english-only to compare")
    else:
        english, _ = build(book, "--force", "--english-only")
        row("clean build of both editions / English only", clean / english, "x", limit=1.5,
            note=f"{clean:.1f} s / {english:.1f} s")
    # Three edits, each a new sentence: one rebuild varies by about a second
    # on this machine, so the median is what is compared with the budget.
    path = book / PROSE_EDIT
    page = book / "_build" / "html" / Path(PROSE_EDIT).with_suffix(".html")
    seconds, seen = [], True
    for i in range(3):
        nb = json.loads(path.read_text(encoding="utf-8"))
        first = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
        sentence = f"{SENTENCE} ({i + 1})"
        first["source"][-1] = first["source"][-1].rstrip("\n") + " " + sentence
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        seconds.append(build(book)[0])
        seen = seen and sentence in page.read_text(encoding="utf-8")
    row("rebuild after a one-sentence edit (median of 3)",
        statistics.median(seconds) if seen else None, "s", limit=5,
        note=(", ".join(f"{s:.2f}" for s in seconds) + " s" if seen
              else "an edited sentence is not on the rebuilt page"))


# --- running: import, explorers, attention -----------------------------------

def bench_import() -> None:
    code = "import sys,time;t=time.perf_counter();import attnbook;" \
           "print(time.perf_counter()-t,'torch' in sys.modules)"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.split() for _ in range(5)]
    row("import attnbook (best of 5)", min(float(r[0]) for r in runs), "s", limit=0.3,
        note=f"torch imported: {runs[0][1]}")


#: What a chapter's kernel does before its first line of real work, one step
#: at a time (run in this order in each fresh kernel).
STARTUP_STEPS = [
    ("import numpy", "import numpy"),
    ("import torch", "import torch"),
    ("import attnbook (matplotlib with it)", "import attnbook, attnbook.plots"),
    ("import attnbook.explorers (ipywidgets)", "import attnbook.explorers"),
    ("first figure shown", "fig, ax = attnbook.plots.new_figure(3, 2)\nax.plot([0, 1])\nfig"),
]


def bench_kernel_startup(kernels: int = 5) -> None:
    """Where a notebook's first second goes: starting a kernel as the build
    does (KERNEL_ENV, in chapters/), then each of STARTUP_STEPS; medians
    over `kernels` fresh kernels."""
    from jupyter_client.manager import start_new_kernel

    from tools.build.book import kernel_environment
    print(f"\nKernel start-up, median over {kernels} fresh kernels:", flush=True)
    seconds: dict[str, list[float]] = {"start a kernel (until it answers)": []}
    for _ in range(kernels):
        with kernel_environment():
            start = time.perf_counter()
            manager, client = start_new_kernel(kernel_name="python3", cwd=str(ROOT / "chapters"),
                                               stderr=subprocess.DEVNULL)
            seconds["start a kernel (until it answers)"].append(time.perf_counter() - start)
        try:
            for name, code in STARTUP_STEPS:
                start = time.perf_counter()
                reply = client.execute_interactive(code, store_history=False,
                                                   output_hook=lambda msg: None)
                if reply["content"]["status"] != "ok":
                    sys.exit(f"bench: {code!r} failed in a fresh kernel: {reply['content']}")
                seconds.setdefault(name, []).append(time.perf_counter() - start)
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    for name, samples in seconds.items():
        row(f"kernel: {name}", statistics.median(samples), "s",
            note=f"{min(samples):.2f} to {max(samples):.2f} s")
    total = sum(statistics.median(s) for s in seconds.values())
    row("kernel: start-up before a chapter's own work", total, "s",
        note="the steps above, added up")


def bench_explorers(moves: int = 50) -> None:
    from attnbook.explorers import png
    from tools.bench.explorer_cases import KINDS, make
    print(f"\nExplorer slider moves: median and p95 over {moves} moves after 5 warm-up moves, "
          "each a value's first visit (no kept frame); revisit: the value's frame kept; "
          "naive: a new figure drawn in full and encoded, 20 times:", flush=True)
    for kind in KINDS:
        e = make(kind)
        e.widget()
        n, step = len(e.values), iter(range(10 ** 6))

        def first_visit(e=e, n=n, step=step):
            e._live_frames.clear()              # nothing kept from earlier moves
            e.slider.value = (e.index + 1 + next(step) % 2) % n

        def revisit(e=e, n=n, step=step):
            e.slider.value = (e.index + 1 + next(step) % 2) % n

        def naive(kind=kind, n=n, step=step):
            fresh = make(kind)
            fresh.show(next(step) % n)
            png.png_full_redraw(fresh.figure)

        timeit.repeat(first_visit, number=1, repeat=5)
        live = [t * 1000 for t in timeit.repeat(first_visit, number=1, repeat=moves)]
        again = [t * 1000 for t in timeit.repeat(revisit, number=1, repeat=moves)]
        redraw = statistics.median(timeit.repeat(naive, number=1, repeat=20)) * 1000
        row(f"slider {kind}: median", statistics.median(live), "ms", limit=30,
            note=f"p95 {p95(live):.1f} ms; revisit {statistics.median(again):.1f} ms; "
                 f"naive redraw {redraw:.1f} ms")


def bench_attention_vs_torch(rounds: int = 4, n: int = 10) -> None:
    """Median ms per call over `rounds` alternating blocks of `n` calls each
    (after a warm-up block each), so that drift in the machine's speed
    affects both alike."""
    import torch

    from attnbook import scaled_dot_product_attention
    print(f"\nAttention at n_q = n_k = 1024, d_k = d_v = 64 (torch on "
          f"{torch.get_num_threads()} threads):", flush=True)
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        Q, K, V = (rng.normal(size=(1024, 64)).astype(dtype) for _ in range(3))
        Qt, Kt, Vt = (torch.from_numpy(a) for a in (Q, K, V))
        f = functools.partial(scaled_dot_product_attention, Q, K, V)
        g = functools.partial(torch.nn.functional.scaled_dot_product_attention, Qt, Kt, Vt)
        ours, theirs = [], []
        for r in range(rounds + 1):
            a, b = (timeit.repeat(h, number=1, repeat=n) for h in (f, g))
            if r:                                    # round 0 is the warm-up
                ours, theirs = ours + a, theirs + b
        mine, torch_ms = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
        row(f"attnbook attention, {np.dtype(dtype).name} input", mine, "ms",
            note=f"torch {torch_ms:.2f} ms ({mine / torch_ms:.1f} x); attnbook computes in float64")


# --- reading: page weight ----------------------------------------------------

MATH_VISIBLE = """() => {
    // formulas are typeset in the HTML, so they show once KaTeX's fonts are in
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    const fonts = performance.getEntriesByType('resource')
        .filter(r => r.name.includes('/katex/fonts/')).map(r => r.responseEnd);
    return {fcp: fcp ? fcp.startTime : null, fonts: fonts.length ? Math.max(...fonts) : 0,
            formulas: document.querySelectorAll('.katex').length};
}"""


def page_load(browser, url: str, javascript: bool) -> tuple[list[int], dict]:
    """(body sizes of everything loaded, MATH_VISIBLE's timings) for one visit."""
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    loaded: list[int] = []
    page.on("requestfinished",
            lambda r: loaded.append(r.sizes()["responseBodySize"]))
    page.goto(url, wait_until="networkidle")
    timings = page.evaluate(MATH_VISIBLE)
    context.close()
    return loaded, timings


def bench_pages(html: Path) -> None:
    chromium = find_chromium()
    if not (html.is_dir() and chromium):
        print("\n(page weights need a built book and Chromium)")
        return
    from playwright.sync_api import sync_playwright
    print("\nPage weight: everything Chromium loads for the page, nothing cached, with "
          "JavaScript on (budget) and off; math visible: when the page's formulas can "
          "show (first paint, or the last KaTeX font if later):", flush=True)
    visible = []
    with serve(html) as (base, _), sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for page_path in sorted((html / "chapters").glob("*.html")):
            url = f"{base}/chapters/{page_path.name}"
            loaded, t = page_load(browser, url, javascript=True)
            row(f"page {page_path.stem}", sum(loaded) / 1e6, "MB", limit=2,
                note=f"HTML {page_path.stat().st_size / 1e6:.2f} MB + {len(loaded) - 1} assets")
            off, _ = page_load(browser, url, javascript=False)
            row(f"page {page_path.stem}, JavaScript off", sum(off) / 1e6, "MB",
                note=f"{len(off)} requests")
            if t["fcp"] is not None:
                shown = max(t["fcp"], t["fonts"])
                visible.append(shown - t["fcp"])
                row(f"page {page_path.stem}: math visible", shown, "ms",
                    note=f"{t['formulas']} formulas; first paint {t['fcp']:.0f} ms")
        browser.close()
    if visible:
        row("math visible after first paint, slowest chapter page", max(visible), "ms",
            limit=100, note="0: the formulas show at first paint (typeset at build time, "
            "their fonts preloaded)")


def bench_make_test() -> None:
    """`make test` as CI runs it (.ci/run sets CI=true: the book is built
    with every notebook executed afresh, and a missing browser fails)."""
    print("\nRunning `make test` with CI=true, as .ci/run does:", flush=True)
    start = time.perf_counter()
    proc = subprocess.run(["make", "test"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "CI": "true"})
    elapsed = time.perf_counter() - start
    (ROOT / "_build" / "bench-make-test.log").write_text(proc.stdout + proc.stderr)
    summary = next((line.strip("= ") for line in reversed(proc.stdout.splitlines())
                    if " passed" in line or " failed" in line or " error" in line), "?")
    row("make test (CI=true)", elapsed / 60, "min", limit=6,
        note=f"exit {proc.returncode}: {summary} (output: _build/bench-make-test.log)")


def print_table() -> None:
    print("\n" + "=" * 96)
    print(f"{'measure':<48} {'value':>12}  {'target':<12} {'':<6}")
    print("-" * 96)
    for r in ROWS:
        value = "-" if r["value"] is None else f"{r['value']:.2f} {r['unit']}"
        mark = {None: "", True: "met", False: "MISSED"}[r["holds"]]
        if r["value"] is None and r["target"]:
            mark = "(none)"
        print(f"{r['measure']:<48} {value:>12}  {r['target']:<12} {mark:<6}")
        if r["note"]:
            print(f"{'':<4}{r['note']}")
    print("=" * 96)
    missed = [r["measure"] for r in ROWS if r["holds"] is False]
    print(f"{len(missed)} budget(s) missed" + (": " + "; ".join(missed) if missed else ""))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.bench",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="no builds, no `make test`, five pages on a phone")
    parser.add_argument("--skip-test", action="store_true", help="no `make test`")
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    with tempfile.TemporaryDirectory(prefix="attnbook-bench-") as tmp:
        html = ROOT / "_build" / "html"
        if not args.quick:
            book = scratch_book(Path(tmp))
            bench_builds(book)
            html = book / "_build" / "html"
        bench_import()
        bench_kernel_startup()
        bench_explorers()
        bench_attention_vs_torch()
        bench_pages(html)
        from tools.bench import phone
        phone.bench_phone(html, phone.QUICK if args.quick else None, row=row)
    if not (args.quick or args.skip_test):
        bench_make_test()
    print_table()
    out = ROOT / "_build" / "bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"started": started, "machine": {
        "cpus": os.cpu_count(), "python": sys.version.split()[0]}, "rows": ROWS}, indent=1))
    print(f"written to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
