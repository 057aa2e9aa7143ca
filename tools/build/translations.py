"""Bring the Chinese catalogues up to date after an English edit:
python -m tools.build --translations   (or `make translations`)

1. extracts every translatable message of the book with Sphinx's gettext
   builder (through jupyter-book, with the book's own config, so the
   notebooks' prose and the toc captions are included; every page is read
   afresh, so a changed extension takes effect; autodoc output is
   left out by tools/sphinx/i18n.py) into _build/gettext/, and the text
   of every figure and explorer that the executed notebooks recorded into
   _build/gettext/figures.pot (tools/build/figures.py);
2. runs `sphinx-intl update -l zh_CN`, which adds new messages (empty),
   marks changed ones fuzzy (with the old translation as a starting point)
   and retires deleted ones in locales/zh_CN/LC_MESSAGES/*.po.

Then translate every empty or fuzzy message (remove the `#, fuzzy` line once
the translation is right); tests/test_translation.py fails until you do.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tools.build import book, figures
from tools.project import ROOT, config


def extract_messages(output: Path) -> Path:
    """Run the gettext builder into `output`; return the folder of .pot files.

    The notebooks' outputs hold translatable text too (figure alt text, the
    explorers' descriptions), so they must be the build's: every notebook the
    execution cache lacks is executed first as the build executes it
    (`book.pre_execute`: explorers render their frames, removed cells
    run isolated). Left to itself, the gettext build would execute a missing
    notebook in its own environment, without the explorers' static frames,
    and store that in the cache the HTML build reads."""
    book.invalidate_cache_if_attnbook_changed()
    failed = book.pre_execute(ROOT / config()["execute"]["cache"])
    if failed:
        sys.stderr.write("\n".join(failed) + "\n")
        raise SystemExit("a notebook failed to execute, so its messages cannot be extracted")
    config_path = book.effective_config(offline=True)
    proc = subprocess.run([sys.executable, "-c", book.JUPYTER_BOOK, "build", str(ROOT),
                           "--config", str(config_path),
                           "--builder", "custom", "--custom-builder", "gettext",
                           "--path-output", str(output), "--all"],
                          cwd=ROOT, text=True, capture_output=True,
                          env={**os.environ, **book.KERNEL_ENV})
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit("the gettext build failed")
    pot = output / "_build" / "gettext"
    figures.extract(ROOT / config()["execute"]["cache"], pot)
    return pot


def main() -> int:
    pot = extract_messages(ROOT / "_build" / "gettext")
    sphinx_intl = Path(sys.executable).with_name("sphinx-intl")
    subprocess.run([str(sphinx_intl), "update", "-p", str(pot), "-d", "locales", "-l", "zh_CN"],
                   cwd=ROOT, check=True)
    print("Now translate the empty and fuzzy messages in locales/zh_CN/LC_MESSAGES/ "
          "(tests/test_translation.py lists them).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
