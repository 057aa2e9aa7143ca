"""What the tools and the tests share: where the book is, what it contains,
how it is configured, and how it is served and read (a quiet local HTTP
server and Debian's headless Chromium)."""
from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", "--disable-sync", "--disable-quic"]


def config() -> dict:
    """_config.yml as written."""
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def book_config() -> dict:
    """_config.yml, with the local extensions', the templates' and the favicon's paths made
    absolute: jupyter-book resolves them against the folder of the config file
    it is given, and a build from another config (ours in _build/, a scratch
    book) must find them."""
    conf = config()
    local = conf["sphinx"].get("local_extensions") or {}
    conf["sphinx"]["local_extensions"] = {name: str(ROOT / path) for name, path in local.items()}
    sphinx = conf["sphinx"]["config"]
    if sphinx.get("html_favicon"):
        sphinx["html_favicon"] = str(ROOT / sphinx["html_favicon"])
    if sphinx.get("templates_path"):
        sphinx["templates_path"] = [str(ROOT / p) for p in sphinx["templates_path"]]
    return conf


def toc_files() -> list[str]:
    """Every file named in _toc.yml, in reading order, without extension."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part["chapters"]]
    return files


def toc_notebooks() -> list[Path]:
    """The notebooks _toc.yml names, in reading order."""
    return [ROOT / f"{f}.ipynb" for f in toc_files() if (ROOT / f"{f}.ipynb").is_file()]


def chapter_notebooks() -> list[Path]:
    """Every notebook in chapters/, sorted by name."""
    return sorted((ROOT / "chapters").glob("*.ipynb"))


def find_chromium() -> str | None:
    """Path of Chromium ($CHROMIUM, Debian's /usr/bin/chromium or on PATH), or None."""
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder without logging to stderr; records (status, path) of
    every answer in its server's `requests` list."""

    def log_message(self, *args):
        pass

    def log_request(self, code="-", size="-"):
        self.server.requests.append((int(code), self.path))


@contextlib.contextmanager
def serve(directory: Path) -> Iterator[tuple[str, list[tuple[int, str]]]]:
    """Serve `directory` on 127.0.0.1 at a free port; yields (base URL, the
    list of (status, path) answered so far)."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: QuietHandler(*a, directory=str(directory)))
    server.requests = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.requests
    finally:
        server.shutdown()
        server.server_close()
