"""The build's kernels, forked from a server that has imported torch and the
rest (tools/build/warm_kernels.py), behave as fresh kernels do: an empty
namespace, their own process, the launcher's working directory and
environment, outputs and errors reported as usual; and one whose launcher is
killed does not outlive it."""
from __future__ import annotations

import os
import time

import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tools.build import book, warm_kernels

PROBE = """
import os, sys
print(os.getpid(), os.getppid(), os.getcwd(), os.environ.get("ATTNBOOK_PROBE"),
      "torch" in sys.modules, "attnbook" in sys.modules, sys.path, sep="|")
"""


def run(cells: list[str], cwd, env=None):
    nb = new_notebook(cells=[new_code_cell(c) for c in cells],
                      metadata={"kernelspec": {"name": "python3", "language": "python",
                                               "display_name": "Python 3"}})
    result = book.execute_notebook(nb, cwd, env=env)
    return nb, result


def run_fresh(cells: list[str], cwd):
    """`run` in a kernel started the usual way, whatever the fixtures serve."""
    saved = os.environ.pop(warm_kernels.SOCKET_ENV, None)
    try:
        return run(cells, cwd)
    finally:
        if saved is not None:
            os.environ[warm_kernels.SOCKET_ENV] = saved


def printed(nb, i: int = 0) -> str:
    return "".join(o.get("text", "") for o in nb.cells[i].outputs if o.output_type == "stream")


@pytest.fixture(scope="module")
def server():
    with book.kernel_environment(), warm_kernels.serving():
        assert warm_kernels.client_options(), "serving() did not name the server"
        yield
    assert not warm_kernels.client_options()


def test_a_warm_kernel_is_a_fresh_process_with_the_launchers_place_and_environment(
        server, tmp_path):
    first, result = run([PROBE, "x = 1", "print(sorted(k for k in globals() if k == 'x'))"],
                        tmp_path, env={"ATTNBOOK_PROBE": "first"})
    assert result.err is None, result.err
    second, _ = run([PROBE, "print('x' in globals())"], tmp_path / "..",
                    env={"ATTNBOOK_PROBE": "second"})
    pid1, parent1, cwd1, probe1, torch1, attnbook1, path1 = printed(first).strip().split("|")
    pid2, parent2, cwd2, probe2, torch2, _, _ = printed(second).strip().split("|")
    assert pid1 != pid2 and int(pid1) != os.getpid()
    assert parent1 == parent2, "both kernels should be children of the one server"
    assert (cwd1, cwd2) == (str(tmp_path), str(tmp_path.parent))
    assert (probe1, probe2) == ("first", "second")
    assert torch1 == torch2 == "True", "torch should be imported before the first cell"
    assert attnbook1 == "False", "the book's own package is imported by the notebook"
    assert printed(first, 2).strip() == "['x']" and printed(second, 1).strip() == "False"
    fresh, _ = run_fresh([PROBE], tmp_path)
    assert path1 == printed(fresh).strip().split("|")[-1], "sys.path as in a fresh kernel"


ENVIRONMENT = "import json, os\nprint(json.dumps(dict(os.environ)))"


def test_a_warm_kernel_has_the_environment_of_a_fresh_one(server, tmp_path):
    """With what the preloaded imports set (debugpy sets PYDEVD_USE_FRAME_EVAL),
    as a fresh kernel sets it when it imports them itself."""
    import json
    warm, _ = run([ENVIRONMENT], tmp_path)
    fresh, _ = run_fresh([ENVIRONMENT], tmp_path)
    warm_env, fresh_env = (json.loads(printed(nb)) for nb in (warm, fresh))
    assert warm_env.pop(warm_kernels.SOCKET_ENV)
    assert "PYDEVD_USE_FRAME_EVAL" in fresh_env
    assert warm_env == fresh_env


def test_a_failing_cell_is_reported_as_in_a_fresh_kernel(server, tmp_path):
    nb, result = run(["print('before')", "1 / 0", "print('never')"], tmp_path)
    assert result.err is not None and "ZeroDivisionError" in str(result.err)
    assert printed(nb) == "before\n"
    assert nb.cells[2].outputs == []


def test_display_data_reaches_the_notebook(server, tmp_path):
    nb, result = run(["from IPython.display import display, HTML\ndisplay(HTML('<b>hi</b>'))"],
                     tmp_path)
    assert result.err is None
    assert nb.cells[0].outputs[0]["data"]["text/html"] == "<b>hi</b>"


def test_a_kernel_dies_with_its_launcher(server, tmp_path):
    """The build stops each kernel by killing its launcher (shutdown_kernel
    "immediate"); the forked kernel must go too, not linger until the end."""
    _, _ = run([PROBE], tmp_path)        # warm the server up
    nb, _ = run([PROBE], tmp_path)
    pid = int(printed(nb).split("|")[0])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"the kernel {pid} outlived its launcher by 10 s")


def test_without_the_server_kernels_start_as_usual(tmp_path):
    nb, result = run_fresh([PROBE], tmp_path)
    assert result.err is None
    assert printed(nb).strip().split("|")[4] == "False", "a fresh kernel imports no torch"


def test_the_tests_kernels_take_the_machine_their_environment_names(tmp_path):
    """tests/nbrun.py starts a server per environment (tests/test_platforms.py
    emulates machines with them): what torch reads when it loads or first
    computes must be the emulated machine's, not the server's defaults."""
    from nbrun import run as run_like_the_tests
    nb = new_notebook(cells=[new_code_cell(
        "import torch\nprint(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())")])
    run_like_the_tests(nb, "probe", tmp_path, {"ATEN_CPU_CAPABILITY": "default",
                                              "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"})
    assert printed(nb).split() == ["DEFAULT", "2"]


WIDGETS = """
import comm, ipywidgets
print("jupyter.widget" in comm.get_comm_manager().targets)
"""


def test_packages_that_register_with_ipython_on_import_do_so_in_a_warm_kernel(server,
                                                                               tmp_path):
    """ipywidgets registers its comm targets when imported into a running
    kernel; imported by the server, before any kernel, it would not."""
    warm, _ = run([WIDGETS], tmp_path)
    fresh, _ = run_fresh([WIDGETS], tmp_path)
    assert printed(warm).strip() == printed(fresh).strip() == "True"
