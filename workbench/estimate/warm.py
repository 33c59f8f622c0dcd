"""A warm measuring process: fresh measuring processes without paying their imports each time.

An estimate measures in a fresh Python process (see isolated.py), and starting one took 3.5 s on
the 2-core machine before it measured anything, nearly all of it importing torch, Kornia, DALI
and Albumentations; an app's estimate button, a notebook comparing backends or a test suite
paid it for every measurement. So the first measurement of a session starts one warm process
that imports what every measurement needs (and a backend's own libraries at its first
measurement, kept for the next ones) and then waits; each measurement is a child forked from it. The child
is a new process that has run nothing (the warm process never measures, builds a pipeline or
starts a thread pool), as a fresh `python -m ...` is, with the imports already done.

The warm process listens on a Unix socket in a private folder; a measurement connects, sends one
JSON line (the request, the caller's environment, working folder and a file for the child's
stderr), and reads the child's stdout from the connection: its pid first, then whatever it
writes. The warm process exits when the session that started it closes its stdin (or exits), and
is started anew when the caller's environment changes (libraries read it at import).
Linux only (fork after these imports is not safe on macOS); elsewhere a fresh process is started.

Example:
    >>> available() in (True, False)
    True
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from typing import Callable, Iterator

READY = "workbench-warm ready"
PID = "workbench-warm pid "
# Set per test by pytest: not a change that needs new imports.
VOLATILE_ENV = frozenset({"PYTEST_CURRENT_TEST"})


def available() -> bool:
    """Whether measurements can fork from a warm process here (Linux)."""
    return sys.platform.startswith("linux") and hasattr(os, "fork") and hasattr(socket, "AF_UNIX")


class Child:
    """One measuring child forked from the warm process: its output lines, and stopping it."""

    def __init__(self, connection: socket.socket):
        self._connection = connection
        self._reader = connection.makefile("r", encoding="utf-8", newline="\n")
        first = self._reader.readline()
        if not first.startswith(PID):
            connection.close()
            raise RuntimeError(f"the warm measuring process did not start a child: {first!r}")
        self.pid = int(first[len(PID):])

    @property
    def lines(self) -> Iterator[str]:
        """The child's stdout, line by line, until it exits (and its own children close it)."""
        return iter(self._reader)

    def stop(self) -> None:
        """Kill the child (its DataLoader workers watch it and follow)."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self, timeout: float = 30.0) -> None:
        """Wait until the child is gone (the warm process reaps it), then close the connection."""
        deadline = time.monotonic() + timeout
        while _exists(self.pid) and time.monotonic() < deadline:
            time.sleep(0.005)
        self._reader.close()
        self._connection.close()


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a pid reused by another user's process: ours is gone
        return False
    return True


class WarmProcess:
    """A started warm process (`python -m MODULE --warm SOCKET`) and how to ask it for a child."""

    def __init__(self, module: str, env: dict[str, str], timeout: float = 300.0):
        self.env = env
        self._folder = tempfile.mkdtemp(prefix="wb-warm-")
        self.path = os.path.join(self._folder, "socket")
        self._errors = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([sys.executable, "-m", module, "--warm", self.path], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._errors, text=True, env=env)
        started, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not started or not self.proc.stdout.readline().startswith(READY):
            self.close()
            self._errors.seek(0)
            raise RuntimeError(f"the warm measuring process did not start: {self._errors.read()[-2000:].strip()}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def fork(self, request: dict, env: dict[str, str], errors_path: str) -> Child:
        """A new child running the request, in `env` and the current folder, stderr to `errors_path`."""
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(self.path)
        message = {"request": request, "env": env, "cwd": os.getcwd(), "errors": errors_path}
        connection.sendall((json.dumps(message) + "\n").encode())
        return Child(connection)

    def close(self) -> None:
        """Stop the warm process (closing its stdin is its signal) and remove its socket."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self._errors.close()
        shutil.rmtree(self._folder, ignore_errors=True)


_WARM: dict[str, WarmProcess] = {}
_LOCK = threading.Lock()


def close_all() -> None:
    """Stop this session's warm processes (the next measurement starts a new one)."""
    with _LOCK:
        for warm in _WARM.values():
            warm.close()
        _WARM.clear()


def fork_child(module: str, request: dict, env: dict[str, str], errors_path: str) -> Child:
    """A measuring child of the session's warm process for `module` (started on first use, and
    anew when it died or `env` changed other than in VOLATILE_ENV)."""
    steady = {k: v for k, v in env.items() if k not in VOLATILE_ENV}
    with _LOCK:
        warm = _WARM.get(module)
        if warm is not None and (not warm.alive() or warm.env != steady):
            warm.close()
            warm = None
        if warm is None:
            warm = _WARM[module] = WarmProcess(module, steady)
        return warm.fork(request, env, errors_path)


def serve(path: str, prepare: Callable[[dict | None], None], handle: Callable[[dict], int]) -> None:
    """The warm process: run `prepare(None)`, listen on `path`, and for each connection run
    `prepare(request)` here (imports a kind of request needs, kept for the next ones), then fork a
    child that runs `handle(request)`; until stdin closes."""
    prepare(None)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they exit
    sys.stdout.write(READY + "\n")
    sys.stdout.flush()
    while True:
        readable, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in readable and not os.read(sys.stdin.fileno(), 4096):
            break  # the session that started us is gone
        if listener in readable:
            connection, _ = listener.accept()
            try:
                message = json.loads(connection.makefile("r", encoding="utf-8").readline())
                prepare(message["request"])
            except Exception:  # a broken request: the caller sees the connection close
                connection.close()
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                listener.close()
                os._exit(_child(connection, message, handle))
            connection.close()
    listener.close()
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)  # the private folder of the socket


def _child(connection: socket.socket, message: dict, handle: Callable[[dict], int]) -> int:
    """In the forked child: become the process the message asks for, and run its request."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the child waits for its own children
    with own_exit_functions():
        return _run_child(connection, message, handle)


@contextlib.contextmanager
def own_exit_functions() -> Iterator[None]:
    """Run, on leaving, the exit functions registered inside (atexit's), newest first.

    A forked child ends with os._exit, which runs no exit function: not its parent's, which must
    not run twice, but not its own either, such as DALI's removal of each temporary file its
    autograph writes (every DALI estimate left them in the temporary folder).

    Example:
        >>> done = []
        >>> with own_exit_functions():
        ...     _ = atexit.register(done.append, "cleaned")
        >>> done
        ['cleaned']
    """
    registered = []
    register = atexit.register

    def recording(function, *args, **kwargs):
        registered.append((function, args, kwargs))
        return register(function, *args, **kwargs)

    atexit.register = recording
    try:
        yield
    finally:
        atexit.register = register
        for function, args, kwargs in reversed(registered):
            atexit.unregister(function)
            try:
                function(*args, **kwargs)
            except Exception:  # as atexit does: one failing function does not stop the others
                traceback.print_exc()


def _run_child(connection: socket.socket, message: dict, handle: Callable[[dict], int]) -> int:
    try:
        os.environ.clear()
        os.environ.update(message["env"])
        os.chdir(message["cwd"])
        errors = os.open(message["errors"], os.O_WRONLY | os.O_APPEND)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(connection.fileno(), 1)
        os.dup2(errors, 2)
        for fd in (devnull, errors):
            os.close(fd)
        connection.close()
        sys.stdout.write(f"{PID}{os.getpid()}\n")
        sys.stdout.flush()
        code = handle(message["request"])
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code
