"""`make bench`: figures the book promises, printed, never asserted.

- live latency of each explorer's slider callback (median and 95th percentile
  over 50 moves) against a naive version that builds and renders a new figure
  per move; target: median <= 30 ms for the d_k explorer;
- `import attnbook` time (target < 0.3 s, torch not imported);
- the static explorers' HTML size, and each built page's size with its images
  (target: a chapter page under 3 MB), when _build/html exists.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))   # reuse the test suite's explorer factory


def timed(fn, n=50):
    times = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), float(np.percentile(times, 95))


def bench_explorers():
    from test_explorers import KINDS, make

    from attnbook import explorers as ex
    print("\nExplorer latency per slider move (ms), 50 moves, this machine:")
    print(f"{'explorer':<12} {'live median':>11} {'live p95':>9} {'naive median':>12} "
          f"{'naive p95':>9} {'speed-up':>8}  static HTML")
    for kind in KINDS:
        e = make(kind)
        e.widget()
        n = len(e.values)

        def live(i, e=e, n=n):
            e.slider.value = (e.index + 1 + i % 2) % n

        def naive(i, kind=kind, n=n):
            fresh = make(kind)       # a new figure every move, fully laid out and drawn
            fresh.show((i + 1) % n)
            ex._png(fresh.figure, ex.LIVE_DPI, fast=True)

        live_med, live_p95 = timed(live)
        naive_med, naive_p95 = timed(naive, n=20)
        size = len(e.to_html()) / 1e6
        target = "  (target <= 30 ms)" if kind == "dk" else ""
        print(f"{kind:<12} {live_med:>11.1f} {live_p95:>9.1f} {naive_med:>12.1f} "
              f"{naive_p95:>9.1f} {naive_med / live_med:>7.1f}x  {size:.2f} MB{target}")


def bench_import():
    code = "import sys,time;t=time.perf_counter();import attnbook;" \
           "print(time.perf_counter()-t,'torch' in sys.modules)"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.split() for _ in range(5)]
    best = min(float(r[0]) for r in runs)
    print(f"\nimport attnbook: best of 5 = {best * 1000:.0f} ms (target < 300 ms); "
          f"torch imported: {runs[0][1]}")


def bench_pages():
    html = ROOT / "_build" / "html"
    if not html.exists():
        print("\n(no _build/html: run `make book` to measure page sizes)")
        return
    print("\nBuilt page sizes (HTML + its images; target < 3 MB per chapter page):")
    for page in sorted((html / "chapters").glob("*.html")):
        text = page.read_text(errors="replace")
        images = sum((html / "_images" / p.name).stat().st_size
                     for p in (html / "_images").glob("*") if p.name in text) \
            if (html / "_images").exists() else 0
        total = (page.stat().st_size + images) / 1e6
        print(f"  {page.name:<40} {total:6.2f} MB")


def _loop_attention(Q, K, V):
    """One query at a time, as a for loop over the rows of Q."""
    out = np.empty((Q.shape[0], V.shape[1]))
    for i, q in enumerate(Q):
        s = K @ q / np.sqrt(Q.shape[1])
        w = np.exp(s - s.max())
        out[i] = (w / w.sum()) @ V
    return out


def _median_ms(fn, *args, repeat=5):
    return timed(lambda _: fn(*args), repeat)[0]


def bench_attention_backends():
    """Loop over queries vs one numpy call vs torch, for growing n (chapter 6)."""
    import torch

    from attnbook import scaled_dot_product_attention
    print("\nAttention, n queries = n keys, d_k = d_v = 64 (ms, median of 5):")
    print(f"{'n':>6} {'loop/query':>11} {'numpy':>8} {'torch':>8}")
    rng = np.random.default_rng(0)
    for n in (16, 64, 256, 1024):
        Q, K, V = (rng.normal(size=(n, 64)) for _ in range(3))
        Qt, Kt, Vt = (torch.from_numpy(a.copy()) for a in (Q, K, V))
        loop_ms = _median_ms(_loop_attention, Q, K, V)
        np_ms = _median_ms(scaled_dot_product_attention, Q, K, V)
        torch_ms = _median_ms(torch.nn.functional.scaled_dot_product_attention, Qt, Kt, Vt)
        print(f"{n:>6} {loop_ms:>11.2f} {np_ms:>8.2f} {torch_ms:>8.2f}")


if __name__ == "__main__":
    bench_import()
    bench_explorers()
    bench_attention_backends()
    bench_pages()
