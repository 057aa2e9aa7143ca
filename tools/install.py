"""Install what the book needs into the running Python's environment, quietly.

    .venv/bin/python -m tools.install        # make book / make test / make lab run this

Four steps, each one line on the terminal and its pip output in
`.venv/install.log` (the last lines are shown if a step fails):

1. pip itself (>= 23);
2. on Linux, torch's CPU build from PyTorch's CPU index (`TORCH_INDEX`,
   default https://download.pytorch.org/whl/cpu). PyPI's default Linux
   wheel of torch is the CUDA build, which pulls several gigabytes of NVIDIA
   libraries this book does not use. If the index cannot be reached, a one-line
   note says so and torch comes from the default index in step 3. Set
   ``TORCH_INDEX=`` (empty) to take the default index on purpose, for
   instance for CUDA. On macOS and Windows the default wheel is the CPU build;
3. the pinned toolchain, `requirements.txt` (the `torch==` pin there is met
   by the CPU build: a local version such as ``2.13.0+cpu`` satisfies
   ``==2.13.0``);
4. `attnbook` itself, editable.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def say(msg: str) -> None:
    print(f"[setup] {msg}", flush=True)


def torch_pin(requirements: Path = ROOT / "requirements.txt") -> str:
    """The version `requirements.txt` pins torch to, e.g. "2.13.0"."""
    match = re.search(r"^torch==(\S+)", requirements.read_text(), re.M)
    if not match:
        raise SystemExit(f"{requirements} pins no torch version (a line torch==X)")
    return match.group(1)


def installed_torch() -> str | None:
    """The installed torch's version without its local label, or None."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("torch").split("+")[0]
    except PackageNotFoundError:
        return None


def reachable(url: str, timeout: float = 10.0) -> bool:
    """Whether `url` answers at all (any HTTP status counts as an answer)."""
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout)
        return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


def torch_command(pin: str, index: str, platform: str = sys.platform,
                  have: str | None = None, index_ok=reachable) -> list[str] | None:
    """The pip arguments that install torch's CPU build, or None when step 3
    should take torch from the default index (printing why, where it matters)."""
    if have == pin:
        return None                     # already there (CPU or CUDA: the reader's choice)
    if not platform.startswith("linux"):
        return None                     # macOS, Windows: the default wheel is the CPU build
    if not index:
        say("TORCH_INDEX is empty: torch comes from the default index "
            "(on Linux, the CUDA build)")
        return None
    if not index_ok(index.rstrip("/") + "/torch/"):
        say(f"note: PyTorch's CPU index ({index}) could not be reached, so torch comes "
            f"from the default index (on Linux that can be the CUDA build, several GB)")
        return None
    return ["install", f"torch=={pin}", "--no-deps", "--index-url", index]


def pip(args: list[str], title: str, log: Path) -> None:
    """Run `python -m pip args`, its output appended to `log`; one line per step."""
    start = time.perf_counter()
    say(title)
    with log.open("a") as out:
        out.write(f"\n$ pip {' '.join(args)}\n")
        out.flush()
        done = subprocess.run([sys.executable, "-m", "pip", *args, "--disable-pip-version-check"],
                              cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode:
        lines = log.read_text(errors="replace").splitlines()
        for line in lines[-30:]:
            print("    " + line)
        raise SystemExit(f"[setup] FAILED: {title} (pip exited with {done.returncode}); "
                         f"the whole log is {log}")
    say(f"  done in {time.perf_counter() - start:.0f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.install",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="resolve but install nothing (pip --dry-run); the tests use it")
    args = parser.parse_args(argv)
    dry = ["--dry-run"] if args.dry_run else []
    log = Path(sys.prefix) / "install.log"
    log.write_text("")
    say(f"installing the book's packages into {Path(sys.prefix).name}/ "
        f"(pip's output: {log.relative_to(ROOT) if log.is_relative_to(ROOT) else log})")
    if not args.dry_run:
        pip(["install", "--upgrade", "pip>=23"], "pip", log)
    index = os.environ.get("TORCH_INDEX", CPU_INDEX)
    # a dry run decides as on a fresh machine, whatever torch is installed here
    command = torch_command(torch_pin(), index,
                            have=None if args.dry_run else installed_torch())
    if command:
        pip([*command, *dry], f"torch {torch_pin()}, CPU build, from {index}", log)
    pip(["install", "-r", "requirements.txt", *dry],
        "the pinned toolchain (requirements.txt; the first time takes a few minutes)", log)
    if not args.dry_run:
        pip(["install", "--no-deps", "--no-build-isolation", "-e", "."], "attnbook (editable)",
            log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
