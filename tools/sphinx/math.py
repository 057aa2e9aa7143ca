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

A page with formulas also preloads the two KaTeX fonts every such page uses
(upright and italic), so its formulas can show at first paint instead of
waiting for the stylesheet to ask for them; the other fonts load only where a
page uses them.
"""
from __future__ import annotations

import socket
import time
from pathlib import Path
from subprocess import PIPE, Popen

from sphinx.application import Sphinx

#: The fonts of plain symbols and of letters in maths, on every page with formulas.
PRELOAD = ("KaTeX_Main-Regular.woff2", "KaTeX_Math-Italic.woff2")


def preload_fonts(app: Sphinx, pagename: str, templatename: str, context: dict,
                  doctree) -> None:
    if 'class="katex"' not in context.get("body", "") or not app.config.katex_prerender:
        return
    links = "".join(
        f'<link rel="preload" href="{context["pathto"]("_static/katex/fonts/" + name, 1)}" '
        'as="font" type="font/woff2" crossorigin>\n' for name in PRELOAD)
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
