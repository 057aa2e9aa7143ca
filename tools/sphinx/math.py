"""Formulas are typeset while the book is built, and a formula KaTeX cannot
typeset fails the build.

sphinxcontrib-katex prerenders every formula with KaTeX in Node.js, so pages
carry finished HTML and MathML and load no maths script (they read correctly
with JavaScript off). Its default option ``throwOnError: false`` would show
a formula KaTeX does not understand as red source text and build on; here
that raises instead, naming the formula.

Under load, sphinxcontrib-katex 0.9.11 could connect to its Node.js server
between the moment the server's socket file appears and the moment it
listens, and the build died with "Connection refused" (seen once in a test
run); `start_server_process` here waits until the connection is accepted.

A page with formulas also preloads the KaTeX fonts its formulas use (found
from the classes of KaTeX's HTML), so they can show at first paint instead
of waiting for the stylesheet to ask for each font; a page loads no other
KaTeX font, and a browser test checks that every one it loads was preloaded.
"""
from __future__ import annotations

import re
import socket
import time
from pathlib import Path
from subprocess import PIPE, Popen

from sphinx.application import Sphinx

#: The font of plain symbols and upright text, on every page with formulas.
MAIN = "KaTeX_Main-Regular.woff2"
#: KaTeX's other fonts, each with the classes of KaTeX's HTML that set it
#: (katex.min.css 0.16): a page preloads the fonts its formulas use.
FONT_CLASSES = {
    "KaTeX_Math-Italic.woff2": ("mathnormal",),
    "KaTeX_Main-Italic.woff2": ("mathit", "textit"),
    "KaTeX_Main-Bold.woff2": ("mathbf", "textbf"),
    "KaTeX_Math-BoldItalic.woff2": ("boldsymbol",),
    "KaTeX_AMS-Regular.woff2": ("amsrm", "mathbb", "textbb"),
    "KaTeX_Caligraphic-Regular.woff2": ("mathcal",),
    "KaTeX_Fraktur-Regular.woff2": ("mathfrak", "textfrak"),
    "KaTeX_Typewriter-Regular.woff2": ("mathtt", "texttt"),
    "KaTeX_Script-Regular.woff2": ("mathscr", "textscr"),
    "KaTeX_SansSerif-Regular.woff2": ("mathsf", "textsf"),
    "KaTeX_Size1-Regular.woff2": ("delimsizing size1", "small-op"),
    "KaTeX_Size2-Regular.woff2": ("delimsizing size2", "large-op"),
    "KaTeX_Size3-Regular.woff2": ("delimsizing size3",),
    "KaTeX_Size4-Regular.woff2": ("delimsizing size4",),
}
CLASSES = re.compile(r'<span class="([^"]+)"')


def fonts_used(body: str) -> list[str]:
    """The KaTeX font files the formulas of a page's HTML `body` use."""
    classes = {f" {c} " for c in CLASSES.findall(body)}
    return [MAIN] + [font for font, marks in FONT_CLASSES.items()
                     if any(f" {m} " in c for c in classes for m in marks)]


def preload_fonts(app: Sphinx, pagename: str, templatename: str, context: dict,
                  doctree) -> None:
    body = context.get("body", "")
    if 'class="katex"' not in body or not app.config.katex_prerender:
        return
    links = "".join(
        f'<link rel="preload" href="{context["pathto"]("_static/katex/fonts/" + name, 1)}" '
        'as="font" type="font/woff2" crossorigin>\n' for name in fonts_used(body))
    context["metatags"] = context.get("metatags", "") + links


def start_server_process(cls, rundir: Path, timeout: float):
    """sphinxcontrib-katex's KaTeXServer.start_server_process, retrying the
    connection until the server listens (or `timeout` seconds pass)."""
    socket_path = rundir / "katex.sock"
    process = Popen(cls.build_command(socket=socket_path), stdin=PIPE, stdout=PIPE,
                    cwd=rundir)
    deadline = time.monotonic() + timeout
    while True:
        if socket_path.is_socket():
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(socket_path))
                return process, sock
            except (ConnectionRefusedError, FileNotFoundError):
                sock.close()
        if process.poll() is not None:
            raise RuntimeError(f"KaTeX's Node.js server exited with code {process.returncode} "
                               "before it accepted a connection")
        if time.monotonic() > deadline:
            process.kill()
            raise cls.timeout_error(timeout)
        time.sleep(0.005)


def setup(app: Sphinx) -> dict:
    import sphinxcontrib.katex as katex
    katex.KaTeXServer.start_server_process = classmethod(start_server_process)
    katex.KATEX_DEFAULT_OPTIONS = {**katex.KATEX_DEFAULT_OPTIONS, "throwOnError": True,
                                   "strict": "error"}
    app.connect("html-page-context", preload_fonts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
