"""The page as a phone reader gets it: LCP and bytes fetched before first paint.

Each page is loaded once in a fresh browser context with the cache off,
under Lighthouse's mobile profile emulated through the Chrome DevTools
Protocol: 150 ms round trip, 1.6 Mbit/s down, 750 kbit/s up
(``Network.emulateNetworkConditions``), the CPU slowed 4x
(``Emulation.setCPUThrottlingRate``), a 412 x 823 touch screen at 1.75
device pixels per CSS pixel, with a Chinese system font as every phone has
(`phone_font_env`; ``--no-phone-font`` measures a reader without one). The
book is served by `gzip_server`, which
compresses text as a static host does (nginx's ``gzip on`` with
``gzip_types``, GitHub Pages, Netlify), so the bytes are the bytes a reader
downloads.

Two figures per page:

- LCP: the last ``largest-contentful-paint`` entry once the network is idle
  (nothing was clicked, so it is final);
- bytes before first paint: the transfer size (headers and compressed body)
  of the page and of every resource *requested* before first contentful
  paint, whether or not it had arrived by then: what competes with the page
  for the phone's bandwidth before the reader sees anything.

    python -m tools.bench.phone              # every page of both editions
    python -m tools.bench.phone --quick      # ch 1, 5, 11, 16 and zh ch 16
    python -m tools.bench.phone --html DIR   # another build (e.g. a copy of an older one)
    python -m tools.bench.phone --list chapters/01_looking_things_up.html   # what it fetched

`make bench` runs `bench_phone` over every page (tools/bench/__main__.py).
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import http.server
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from tools.project import CHROMIUM_ARGS, ROOT, find_chromium

#: Lighthouse's mobile profile ("Slow 4G" and a mid-range phone's CPU)
LATENCY_MS = 150
DOWN_BITS = 1.6e6
UP_BITS = 750e3
CPU_SLOWDOWN = 4
VIEWPORT = {"width": 412, "height": 823}
SCALE = 1.75

#: the budgets of issue 39
LCP_BUDGET_S = 1.5
BEFORE_PAINT_BUDGET_KB = 150

QUICK = ["chapters/01_looking_things_up.html", "chapters/05_scaling.html",
         "chapters/11_positions.html", "chapters/16_induction_head.html",
         "zh/chapters/16_induction_head.html"]

#: what a static host compresses (nginx's gzip_types, GitHub Pages): text, not
#: images or woff2, which are compressed already
COMPRESSED = {".html", ".css", ".js", ".json", ".svg", ".txt", ".xml", ".map", ".inv",
              ".ttf", ".otf", ".eot"}


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder as a static host does: text gzip-compressed (level 6,
    nginx's default) when the browser accepts it, with Content-Length."""

    def log_message(self, *args):
        pass

    def handle(self):
        # the browser drops connections it no longer needs when a page closes
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            super().handle()

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if (path.suffix not in COMPRESSED or not path.is_file()
                or "gzip" not in self.headers.get("Accept-Encoding", "")):
            return super().send_head()
        cache = self.server.compressed
        key = (path, path.stat().st_mtime_ns)
        if key not in cache:
            cache[key] = gzip.compress(path.read_bytes(), 6, mtime=0)
        body = cache[key]
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Vary", "Accept-Encoding")
        self.end_headers()
        import io
        return io.BytesIO(body)


@contextlib.contextmanager
def gzip_server(directory: Path) -> Iterator[str]:
    """Serve `directory` gzip-compressed on 127.0.0.1; yields the base URL."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: GzipHandler(*a, directory=str(directory)))
    server.compressed = {}
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


OBSERVE_LCP = """() => {
    window.__lcp = [];
    new PerformanceObserver(list => {
        for (const e of list.getEntries()) window.__lcp.push(
            {t: e.startTime, tag: e.element ? e.element.tagName : '', size: e.size,
             url: e.url || ''});
    }).observe({type: 'largest-contentful-paint', buffered: true});
}"""

MEASURE = """() => {
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    const nav = performance.getEntriesByType('navigation')[0];
    const res = performance.getEntriesByType('resource').map(r => ({
        name: r.name, start: r.startTime, end: r.responseEnd, bytes: r.transferSize,
        type: r.initiatorType}));
    return {fcp: fcp ? fcp.startTime : null, lcp: window.__lcp || [],
            nav: {bytes: nav.transferSize, end: nav.responseEnd}, resources: res};
}"""


def measure_page(browser, url: str) -> dict:
    """One cold load of `url` under the mobile profile: {'lcp': s, 'fcp': s,
    'before_paint': bytes, 'total': bytes, 'fetched': [(start ms, bytes, url)],
    'lcp_element': tag}."""
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=SCALE,
                                  is_mobile=True, has_touch=True)
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    cdp.send("Network.emulateNetworkConditions", {
        "offline": False, "latency": LATENCY_MS,
        "downloadThroughput": DOWN_BITS / 8, "uploadThroughput": UP_BITS / 8})
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})
    page.add_init_script(f"({OBSERVE_LCP})()")
    page.goto(url, wait_until="domcontentloaded", timeout=120_000)
    with contextlib.suppress(Exception):     # a stalled image must not stop the bench
        page.wait_for_load_state("load", timeout=60_000)
        page.wait_for_load_state("networkidle", timeout=30_000)
    m = page.evaluate(MEASURE)
    context.close()
    if m["fcp"] is None or not m["lcp"]:
        raise RuntimeError(f"{url}: no first contentful paint or LCP recorded")
    fcp = m["fcp"]
    early = [r for r in m["resources"] if r["start"] < fcp]
    last = m["lcp"][-1]
    return {"lcp": last["t"] / 1000, "fcp": fcp / 1000, "lcp_element": last["tag"],
            "lcp_url": last["url"],
            "before_paint": m["nav"]["bytes"] + sum(r["bytes"] for r in early),
            "total": m["nav"]["bytes"] + sum(r["bytes"] for r in m["resources"]),
            "fetched": [(r["start"], r["end"], r["bytes"], r["name"]) for r in m["resources"]]}


def pages(html: Path) -> list[str]:
    """Every page of both editions, relative to `html`: the English pages,
    then the Chinese (search.html and genindex.html included)."""
    found = []
    for root in (html, html / "zh"):
        if not root.is_dir():
            continue
        for p in sorted(root.rglob("*.html")):
            rel = p.relative_to(html)
            if rel.parts[0] in ("_static", "_sources", "_images") or (
                    root == html and rel.parts[0] == "zh"):
                continue
            if len(rel.parts) > 1 and rel.parts[-2] in ("_static", "_sources", "_images"):
                continue
            found.append(rel.as_posix())
    return found


#: where the bench keeps the phone's Chinese font (see `phone_font_env`)
FONT_CACHE = ROOT / ".cache" / "bench-fonts"
#: Android's Chinese system font, from Debian's fonts-noto-cjk
PHONE_CJK_FONT = "NotoSansCJK-Regular.ttc"


def has_chinese_font(env: dict | None = None) -> bool:
    out = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True,
                         env=env)
    return out.returncode == 0 and bool(out.stdout.strip())


def phone_font_env() -> dict[str, str] | None:
    """Environment for Chromium in which it has a Chinese system font, as
    every phone has (Android's Noto Sans CJK, iOS's PingFang), or None when
    the machine has one already or none can be had.

    The Chinese edition takes its glyphs from the reader's own Chinese font
    through ``local()`` (tools/sphinx/a11y.py) and fetches the book's Noto
    subset only without one. A build machine often has no Chinese font, so
    without this the bench would measure a reader without one, who fetches
    up to 150 KB of font before the first paint. The font is Debian's
    fonts-noto-cjk (``apt-get download``, nothing installed), kept in
    .cache/bench-fonts/ and given to Chromium alone through its own
    fontconfig file."""
    if shutil.which("fc-list") is None or has_chinese_font():
        return None
    font = FONT_CACHE / PHONE_CJK_FONT
    if not font.is_file():
        if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
            print("[bench] no Chinese system font and no apt-get: the Chinese pages are "
                  "measured as a reader without a Chinese font gets them", flush=True)
            return None
        FONT_CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            got = subprocess.run(["apt-get", "download", "fonts-noto-cjk"], cwd=tmp,
                                 capture_output=True, text=True)
            debs = list(Path(tmp).glob("fonts-noto-cjk_*.deb"))
            if got.returncode or not debs:
                print("[bench] could not download fonts-noto-cjk: the Chinese pages are "
                      "measured as a reader without a Chinese font gets them", flush=True)
                return None
            subprocess.run(["dpkg", "-x", str(debs[0]), f"{tmp}/x"], check=True)
            shutil.copyfile(next(Path(tmp, "x").rglob(PHONE_CJK_FONT)), font)
    conf = FONT_CACHE / "fonts.conf"
    conf.write_text('<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n'
                    "<fontconfig>\n"
                    '  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n'
                    f"  <dir>{FONT_CACHE}</dir>\n"
                    f"  <cachedir>{FONT_CACHE / 'cache'}</cachedir>\n"
                    "</fontconfig>\n")
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    return env if has_chinese_font(env) else None


def launch(p, phone_font: bool = True):
    chromium = find_chromium()
    if not chromium:
        raise SystemExit("the phone bench needs Chromium (apt-get install chromium)")
    env = phone_font_env() if phone_font else None
    return p.chromium.launch(executable_path=chromium,
                             args=[*CHROMIUM_ARGS, "--no-proxy-server"],
                             **({"env": env} if env else {}))


def bench_phone(html: Path, which: list[str] | None = None, runs: int = 1,
                row=None, phone_font: bool = True) -> list[dict]:
    """Measure `which` pages (default: every page) of the build in `html`,
    `runs` cold loads each; report the slowest load of each page through
    `row` (tools/bench's) or print it. Returns one dict per page."""
    from playwright.sync_api import sync_playwright
    which = which or pages(html)
    results = []
    print(f"\nThe page on a phone: {len(which)} pages, {runs} cold load(s) each, under "
          f"Lighthouse's mobile profile ({LATENCY_MS} ms RTT, {DOWN_BITS / 1e6:g} Mbit/s down, "
          f"{UP_BITS / 1e3:g} kbit/s up, CPU {CPU_SLOWDOWN}x slower), served gzip-compressed, "
          "cache off; the slowest load of each page:", flush=True)
    with gzip_server(html) as base, sync_playwright() as p:
        browser = launch(p, phone_font)
        for rel in which:
            loads = [measure_page(browser, f"{base}/{rel}") for _ in range(runs)]
            worst = max(loads, key=lambda m: m["lcp"])
            before = max(m["before_paint"] for m in loads) / 1024
            result = {"page": rel, "lcp": worst["lcp"], "fcp": worst["fcp"],
                      "before_paint_kb": before, "total_kb": worst["total"] / 1024,
                      "lcp_element": worst["lcp_element"],
                      "lcp_all": [m["lcp"] for m in loads]}
            results.append(result)
            note = (f"FCP {worst['fcp']:.2f} s; LCP element {worst['lcp_element'] or '?'}; "
                    f"{worst['total'] / 1024:.0f} KB in all"
                    + ("; loads " + ", ".join(f"{m['lcp']:.2f}" for m in loads) + " s"
                       if runs > 1 else ""))
            if row is None:
                print(f"  {rel}: LCP {worst['lcp']:.2f} s, {before:.0f} KB before first "
                      f"paint  ({note})", flush=True)
            else:
                row(f"phone {rel}: LCP", worst["lcp"], "s", limit=LCP_BUDGET_S, note=note)
                row(f"phone {rel}: before first paint", before, "KB",
                    limit=BEFORE_PAINT_BUDGET_KB)
        browser.close()
    if row is None and results:
        slow = [r["page"] for r in results if r["lcp"] > LCP_BUDGET_S]
        heavy = [r["page"] for r in results if r["before_paint_kb"] > BEFORE_PAINT_BUDGET_KB]
        print(f"slowest LCP {max(r['lcp'] for r in results):.2f} s "
              f"(median {statistics.median(r['lcp'] for r in results):.2f} s), most before "
              f"first paint {max(r['before_paint_kb'] for r in results):.0f} KB; over "
              f"{LCP_BUDGET_S} s: {slow or 'none'}; over {BEFORE_PAINT_BUDGET_KB} KB: "
              f"{heavy or 'none'}")
    return results


def list_fetches(html: Path, rel: str, phone_font: bool = True) -> None:
    """Print what one cold load fetched, in order, and when."""
    from playwright.sync_api import sync_playwright
    with gzip_server(html) as base, sync_playwright() as p:
        browser = launch(p, phone_font)
        m = measure_page(browser, f"{base}/{rel}")
        browser.close()
    print(f"{rel}: FCP {m['fcp']:.2f} s, LCP {m['lcp']:.2f} s ({m['lcp_element']} "
          f"{m['lcp_url'][-60:]}), {m['before_paint'] / 1024:.1f} KB before first paint")
    for start, end, size, name in sorted(m["fetched"]):
        mark = "*" if start < m["fcp"] * 1000 else " "
        print(f" {mark} {start:7.0f} {end:7.0f} ms {size / 1024:7.1f} KB  "
              f"{name.split('/', 3)[-1][:90]}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.phone",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only " + ", ".join(QUICK))
    parser.add_argument("--runs", type=int, default=1, help="cold loads per page (the "
                        "slowest counts)")
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--list", metavar="PAGE", help="what one page fetched, and when")
    parser.add_argument("--no-phone-font", action="store_true",
                        help="measure as a reader without a Chinese system font gets the "
                        "Chinese pages (the machine's own fonts only)")
    parser.add_argument("pages", nargs="*", help="pages relative to the build (default: all)")
    args = parser.parse_args()
    if args.list:
        return list_fetches(args.html, args.list, not args.no_phone_font)
    results = bench_phone(args.html, args.pages or (QUICK if args.quick else None), args.runs,
                          phone_font=not args.no_phone_font)
    missed = [r for r in results if r["lcp"] > LCP_BUDGET_S
              or r["before_paint_kb"] > BEFORE_PAINT_BUDGET_KB]
    raise SystemExit(1 if missed else 0)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
