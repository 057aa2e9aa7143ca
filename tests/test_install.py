"""`make book`'s install step (tools/install.py): torch's CPU build from
PyTorch's CPU index on Linux, the default index when that cannot be reached,
and a quiet terminal.

These machines cannot reach PyTorch's index, so the fallback is what runs
here for real (with pip's --dry-run); the reachable path is checked by the
command it builds.
"""
from __future__ import annotations

import os
import subprocess
import sys

from tools import install
from tools.project import ROOT

UNREACHABLE = "http://127.0.0.1:9/whl/cpu"     # the discard port: nothing answers


def test_the_pin_is_read_from_requirements():
    assert install.torch_pin() == "2.13.0"


def test_linux_takes_the_cpu_index_when_it_answers():
    cmd = install.torch_command("2.13.0", install.CPU_INDEX, platform="linux",
                                have=None, index_ok=lambda url: True)
    assert cmd == ["install", "torch==2.13.0", "--no-deps", "--index-url", install.CPU_INDEX]


def test_other_platforms_and_an_installed_pin_need_no_index():
    ok = lambda url: True  # noqa: E731
    assert install.torch_command("2.13.0", install.CPU_INDEX, platform="darwin",
                                 have=None, index_ok=ok) is None
    assert install.torch_command("2.13.0", install.CPU_INDEX, platform="linux",
                                 have="2.13.0", index_ok=ok) is None
    # another version installed: the pin is installed over it
    assert install.torch_command("2.13.0", install.CPU_INDEX, platform="linux",
                                 have="2.12.0", index_ok=ok) is not None


def test_an_unreachable_index_falls_back_with_a_one_line_note(capsys):
    assert not install.reachable(UNREACHABLE, timeout=2)
    cmd = install.torch_command("2.13.0", UNREACHABLE, platform="linux", have=None)
    assert cmd is None
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "could not be reached" in out[0] and UNREACHABLE in out[0]


def test_an_empty_torch_index_means_the_default_index_on_purpose(capsys):
    assert install.torch_command("2.13.0", "", platform="linux", have=None) is None
    assert "TORCH_INDEX is empty" in capsys.readouterr().out


def test_the_fallback_resolves_from_the_default_index_and_prints_little():
    """The whole step with an unreachable index, as pip --dry-run: it
    succeeds, prints a handful of [setup] lines, and pip's output goes to the
    log, not the terminal."""
    env = {**os.environ, "TORCH_INDEX": UNREACHABLE}
    done = subprocess.run([sys.executable, "-m", "tools.install", "--dry-run"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.strip().splitlines()
    assert all(line.startswith("[setup]") for line in lines), lines
    assert any("could not be reached" in line for line in lines), lines
    assert len(lines) <= 6, lines
    assert not done.stderr.strip(), done.stderr


def test_a_successful_build_prints_one_screen(built_book):
    """`make book` on success: its own [build] lines (what it did, how long,
    where the book is), not Sphinx's log, the launcher script or kernel
    warnings; those stay in _build/build.log."""
    from nbrun import build_once
    ok, output = build_once()
    lines = output.strip().splitlines()
    assert ok and len(lines) <= 15, lines
    assert all(line.startswith("[build]") for line in lines), lines
    assert lines[-1].startswith("[build] open file://"), lines
    assert "Running Sphinx" in (ROOT / "_build" / "build.log").read_text()
