"""Kernels forked from a process that has already imported the heavy modules.

A fresh IPython kernel spends about 2 s of CPU before a notebook's first line
does any work: 0.6 s to start, 1.2 s to import torch, 0.3 s more for
matplotlib (`make bench`, "kernel:" rows). The build executes every chapter
in a fresh kernel, so that is about half a minute of a clean build on two
cores. Here one server process imports those modules once and forks a child
per kernel; the child runs an ordinary ipykernel (IPKernelApp) on the
connection file jupyter_client wrote, so each chapter still starts with an
empty namespace and its own process. Nothing that registers itself with
IPython on import is imported before the fork (`PRELOAD`), and the server
computes nothing. Some settings
are read when torch loads, though, in the server: OpenMP's thread count
(OMP_NUM_THREADS) among them. So a server only starts kernels whose
environment is its own; tests/nbrun.py keeps one per environment.

Use: `serving()` runs the server for the duration of a `with` block;
`client_options()` gives nbclient's NotebookClient the kernel manager that
starts kernels from it.
The kernel command becomes this file, run with `-S` (standard library only)
as a launcher: it hands the server its arguments, environment, working
directory and standard streams, forwards interrupts, and lives as long as
the forked kernel, so jupyter_client can watch and kill it as it would a
kernel; a child whose launcher dies (jupyter_client kills it after the last
cell) exits with it.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import sys

#: Imported once by the server, before any fork: none of them computes
#: anything or looks for a running IPython when imported. Not attnbook, nor
#: ipywidgets: each registers itself with the kernel's IPython on import
#: (attnbook its figure formatters, ipywidgets its comm targets), which the
#: server does not have yet.
#: The last four are what torch and the chapters import lazily, on first
#: use: torch.testing.assert_close imports torch.distributed.tensor and
#: sympy (0.54 s), a `torch.device("meta")` block torch._dynamo (0.35 s
#: more), scipy.special 0.08 s. Six of the sixteen chapters paid for them,
#: each in its own kernel; preloaded, executing the chapters took 53.4 and
#: 55.3 CPU-s instead of 62.4 and 59.3 (user time, two runs each), and
#: every output was as before (timings and memory peaks vary from run to
#: run either way).
#: The ipykernel modules are what every kernel imports as it starts;
#: ipykernel.debugger brings debugpy's pydevd, 0.16 s of each start (the
#: rest a kernel imports then takes 0.02 s).
PRELOAD = ("numpy", "torch", "torch.nn.functional", "matplotlib.figure",
           "matplotlib.backends.backend_agg", "matplotlib.font_manager", "PIL.Image",
           "ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.debugger",
           "sympy", "torch.distributed.tensor", "torch._dynamo", "scipy.special")
#: What importing the ipykernel modules set in the server's environment
#: ({name: value}; debugpy sets PYDEVD_USE_FRAME_EVAL): a fresh kernel has
#: it before its first cell, so a forked kernel gets it on top of the
#: launcher's environment. (What the others set, torch._dynamo's
#: TORCHINDUCTOR_CACHE_DIR, a fresh kernel gets only once a cell imports
#: them, so a forked kernel does not get it.)
_SET_AT_KERNEL_START: dict[str, str] = {}
#: Where the launcher finds the server's socket.
SOCKET_ENV = "ATTNBOOK_WARM_KERNELS"


# --- the launcher: what jupyter_client starts as the kernel -----------------

def launch(argv: list[str]) -> int:
    """Ask the server for a kernel run with `argv`; wait until it ends."""
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(os.environ[SOCKET_ENV])
    request = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()})
    socket.send_fds(conn, [request.encode() + b"\n"], [0, 1, 2])
    reply = conn.makefile("rb").readline()
    if not reply:
        return 1
    child = int(reply)

    def forward(signum, _frame):
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    while conn.recv(1):     # the kernel closes its end when it exits
        pass
    return 0


# --- the server ---------------------------------------------------------------

def serve(path: str) -> None:
    """Listen on the Unix socket `path`, import PRELOAD, then fork a kernel
    per request."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(16)     # launchers queue up while the imports run
    import importlib
    import io
    for name in PRELOAD:
        before = dict(os.environ)
        # pydevd warns on import that frozen modules may hide breakpoints; a
        # fresh kernel sends that to its stderr stream before any cell, unseen
        quiet = name == "ipykernel.debugger"
        with contextlib.redirect_stderr(io.StringIO()) if quiet else contextlib.nullcontext():
            importlib.import_module(name)
        if name.startswith("ipykernel."):
            _SET_AT_KERNEL_START.update(
                (k, v) for k, v in os.environ.items() if before.get(k) != v)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)       # children reap themselves
    parent = os.getppid()
    listener.settimeout(1.0)
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if os.getppid() != parent:      # whoever started it is gone: so is the need
                return
            continue
        message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        while not message.endswith(b"\n"):
            message += conn.recv(1 << 20)
        pid = os.fork()
        if pid == 0:
            listener.close()
            _run_kernel(conn, json.loads(message), fds)
        conn.sendall(f"{pid}\n".encode())
        conn.close()
        for fd in fds:
            os.close(fd)


def _run_kernel(conn: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked child: become the launcher's kernel, then exit."""
    import threading
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd, std in zip(fds, (0, 1, 2), strict=True):
        os.dup2(fd, std)
        os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    for name, value in _SET_AT_KERNEL_START.items():    # as its own imports would
        os.environ.setdefault(name, value)
    os.chdir(request["cwd"])
    del sys.path[0]     # this file's folder; ipykernel_launcher drops the cwd likewise
    argv = list(request["argv"])
    if parent := os.environ.get("JPY_PARENT_PID"):
        # ipykernel read it when the server imported it; without it the kernel
        # thinks it was started from a terminal and prints how to connect
        argv.append(f"--IPKernelApp.parent_handle={parent}")

    def exit_with_launcher():
        while conn.recv(1):
            pass
        os._exit(1)
    threading.Thread(target=exit_with_launcher, daemon=True).start()
    status = 0
    try:
        import logging

        from ipykernel.kernelapp import IPKernelApp
        # The kernel listens on 127.0.0.1 only, for the one build or test that
        # started it; ipykernel's warning that TCP is unencrypted is noise to a
        # reader running `make book` (it printed once per notebook).
        logging.getLogger("IPKernelApp").addFilter(
            lambda record: "without encryption" not in record.getMessage())
        IPKernelApp.launch_instance(argv=argv)
    except SystemExit as stop:
        status = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        import traceback
        traceback.print_exc()
        status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


# --- the build's side -----------------------------------------------------------

@contextlib.contextmanager
def serving(announce: bool = True):
    """Run the server while the block runs; yields its socket's path. The
    server starts from this process's environment, which its kernels must
    share for what is read when torch loads (OMP_NUM_THREADS and the like).
    With `announce`, SOCKET_ENV names it meanwhile, so that every kernel
    this process and its children start comes from it; otherwise pass
    SOCKET_ENV in the environment of the kernels that should. The socket is
    in a new temporary folder (a Unix socket's path must be short, so not
    inside the book)."""
    import subprocess
    import tempfile
    import time
    with tempfile.TemporaryDirectory(prefix="attnbook-kernels-") as tmp:
        path = os.path.join(tmp, "socket")
        server = subprocess.Popen([sys.executable, __file__, "serve", path])
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(path):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the warm-kernel server did not start")
                time.sleep(0.01)
            if announce:
                os.environ[SOCKET_ENV] = path
            yield path
        finally:
            if announce:
                os.environ.pop(SOCKET_ENV, None)
            server.terminate()
            server.wait()


def client_options() -> dict:
    """Keyword arguments for nbclient's NotebookClient: kernels from the
    server that SOCKET_ENV names, if it names one, otherwise none."""
    if SOCKET_ENV not in os.environ:
        return {}
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class WarmKernelManager(AsyncKernelManager):
        """jupyter_client's kernel manager, with this file as the kernel
        command and `ready_client()` as its client."""

        @default("client_factory")
        def _client_factory_default(self):
            return ready_client()

        def format_kernel_cmd(self, extra_arguments=None):
            cmd = super().format_kernel_cmd(extra_arguments)
            return [sys.executable, "-S", os.path.abspath(__file__), *cmd[cmd.index("-f"):]]
    return {"kernel_manager_class": WarmKernelManager}


@functools.cache
def ready_client() -> type:
    """jupyter_client's asynchronous kernel client, ready as soon as the
    kernel has answered kernel_info on the shell channel and reported itself
    idle after one of the kernel_info requests on IOPub: IOPub is connected,
    and holds nothing older. (Replies to requests sent earlier may wait on
    the shell channel; nbclient reads only the reply to what it asked.)
    jupyter_client waits instead until IOPub has been silent for 0.2 s: a
    warm kernel took 0.43-0.56 s to start that way, 0.26-0.33 s this way."""
    import time
    from queue import Empty

    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_core.utils import ensure_async

    class ReadyClient(AsyncKernelClient):
        async def wait_for_ready(self, timeout: float | None = None) -> None:
            deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
            asked = set()
            while True:
                asked.add(self.kernel_info())
                try:
                    reply = await ensure_async(self.shell_channel.get_msg(timeout=1))
                except Empty:
                    reply = None
                if reply is not None and reply["msg_type"] == "kernel_info_reply":
                    # IOPub silent for 0.2 s: not connected yet; its welcome: just
                    # connected, so what the requests so far said there is lost.
                    # Either way, ask again
                    with contextlib.suppress(Empty):
                        while True:
                            msg = await ensure_async(self.iopub_channel.get_msg(timeout=0.2))
                            if msg["msg_type"] == "iopub_welcome":
                                break
                            if (msg["msg_type"] == "status"
                                    and msg["content"]["execution_state"] == "idle"
                                    and msg["parent_header"].get("msg_id") in asked):
                                self._handle_kernel_info_reply(reply)
                                return
                if not await self._async_is_alive():
                    raise RuntimeError("Kernel died before replying to kernel_info")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")
    return ReadyClient


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2])
    else:
        sys.exit(launch(sys.argv[1:]))
