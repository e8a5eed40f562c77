"""Run untrusted Python (a model's code) in a sandboxed subprocess: ``run_python(code) -> SandboxResult``.

Layers, outermost first (each one is checked by ``tests/arenas/test_sandbox.py`` on its own):

* **Network namespace.** The child starts under ``unshare --net`` (as root) or ``unshare --user --map-root-user
  --net`` (unprivileged, where user namespaces are allowed): it has only a loopback device that is down, so no
  connection leaves the sandbox, not even to 127.0.0.1 of the host. Probed once per process; where neither works
  ``SandboxResult.isolation`` says ``"audit-hook"``: only the Python-level guard below stops the network then.
* **Privileges.** Started as root, the child becomes ``nobody`` through ``setpriv`` and keeps only
  ``CAP_DAC_READ_SEARCH`` (to read the interpreter under a private home). Root is exempt from ``RLIMIT_NPROC``, so
  this is what makes the process limit bite; as ``nobody`` it also cannot write to files it does not own.
  ``SandboxResult.privileges`` says ``"nobody"`` or ``"unchanged"``.
* **Resource limits** (``setrlimit`` in the child before any user code; the hook forbids raising them): CPU
  seconds (``SIGXCPU`` at ``cpu_s``, ``SIGKILL`` one second later), address space (``memory_mb``: allocations
  beyond it raise ``MemoryError``), processes and threads of the user (``max_procs``: a fork bomb gets ``EAGAIN``),
  file size, open files, no core dumps. No ``preexec_fn``: forking a threaded parent into Python code is unsafe.
* **Wall clock.** The child leads a new session; at ``timeout_s`` the whole process group is killed, and it is
  killed again after the child exits, so no forked straggler survives the call.
* **Private directory.** A fresh temp dir is the cwd, ``HOME`` and ``TMPDIR``; it is deleted afterwards. The
  environment is minimal and the interpreter runs with ``-I -S -B`` (no site, no user paths, no ``.pyc`` writes).
* **Audit hook** (``sys.addaudithook``, installed before the user's code runs): raises ``SandboxViolation`` (a
  ``PermissionError``) for socket creation and DNS, ``subprocess``, ``os.system``, ``exec*``, ``fork``, ``spawn``,
  ``kill``, opening files for writing (or creating, removing, renaming, chmod-ing) outside the temp dir, reading
  files outside the temp dir and the standard library (so the model cannot read the project's hidden tests or
  reference solutions), and importing ``ctypes``, ``_posixsubprocess`` or other escape hatches. Every blocked
  event is also reported to the parent through a private pipe (``SandboxResult.violations``), so swallowing the
  exception does not hide it.

What it does **not** protect against: this is defence in depth, not a VM. All layers share the host kernel, so a
kernel exploit escapes; the audit hook is a speed bump for careless or accidental code, not a boundary against a
deliberate attacker inside the interpreter (crafted bytecode or a memory-corruption bug can disable it, and a
``PathLike`` can show the hook one path and ``open`` another). The child can still read world-readable files
through the OS when the hook is bypassed (``CAP_DAC_READ_SEARCH`` as ``nobody``), use CPU up to its limits, and
write to world-writable directories such as ``/tmp`` as ``nobody``. Without the namespaces (``isolation ==
"audit-hook"``) the network is only as closed as the hook. ``max_procs`` counts every process of the sandbox's
user, so more than ``max_procs`` concurrent sandboxes can starve each other. Linux only.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import IO

import attrs

__all__ = ["SandboxResult", "launch_mode", "run_python"]

NOBODY = 65534
MAX_OUTPUT_BYTES = 256 * 1024  # per stream; the rest is drained and dropped
_MAX_REPORTS = 20  # violations the child reports through its pipe (the pipe buffer must never fill)

_SETPRIV = (
    "setpriv",
    f"--reuid={NOBODY}",
    f"--regid={NOBODY}",
    "--clear-groups",
    "--inh-caps=+dac_read_search",
    "--ambient-caps=+dac_read_search",
    "--",
)
_PROBE = "import json, os, socket\nprint(os.getuid())\n"

# The program the child runs before the user's code: it installs the audit hook and runs ``main.py`` as
# ``__main__``. argv: [-c, tmpdir, report fd, guard flag, limits as JSON]. It sets the resource limits itself
# (no ``preexec_fn``, which is unsafe in a threaded parent) and must not import subprocess or ctypes.
_BOOTSTRAP = r"""
import builtins, json, os, resource, sys, sysconfig, traceback, linecache, threading

for _name, _soft, _hard in json.loads(sys.argv[4]):
    _which = getattr(resource, _name)
    _old = resource.getrlimit(_which)[1]
    if _old != resource.RLIM_INFINITY:
        _hard = min(_hard, _old)
    resource.setrlimit(_which, (min(_soft, _hard), _hard))
_tmp = os.path.realpath(sys.argv[1])
_fd = int(sys.argv[2])
_guard = sys.argv[3] == "1"
sys.argv = ["main.py"]
builtins.exit = builtins.quit = sys.exit
with open(os.path.join(_tmp, "main.py"), encoding="utf-8") as _f:
    _source = _f.read()


class SandboxViolation(PermissionError):
    '''An operation the sandbox forbids (network, processes, files outside the temp dir, ctypes).'''


builtins.SandboxViolation = SandboxViolation
_reported = [0]


def _report(text):
    if _reported[0] < %(max_reports)d:
        _reported[0] += 1
        try:
            os.write(_fd, (text.replace("\n", " ")[:300] + "\n").encode("utf-8", "replace"))
        except OSError:
            pass


if _guard:
    _stdlib = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    _readable = tuple({os.path.dirname(p) for p in _stdlib}) + (
        _tmp, "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/proc/self", "/etc/localtime",
        "/usr/share/zoneinfo",
    )
    _WRITE = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
    _BLOCKED = {
        "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg",
        "subprocess.Popen", "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "ctypes.call_function",
        "sys.remote_exec", "os.setuid", "os.setgid", "resource.setrlimit", "resource.prlimit",
    }
    _BLOCKED_IMPORTS = {"ctypes", "_ctypes", "_posixsubprocess", "_xxsubinterpreters", "_testcapi"}
    _MUTATE = {
        "os.remove": (0,), "os.rmdir": (0,), "os.mkdir": (0,), "os.rename": (0, 1), "os.replace": (0, 1),
        "os.chmod": (0,), "os.chown": (0,), "os.link": (0, 1), "os.symlink": (0, 1), "os.truncate": (0,),
        "os.utime": (0,), "os.chdir": (0,), "os.mkfifo": (0,), "os.mknod": (0,), "os.setxattr": (0,),
        "os.removexattr": (0,), "shutil.rmtree": (0,),
    }
    _state = threading.local()

    def _inside(path, roots):
        if isinstance(path, int) or path is None:
            return True  # an fd that is already open, or no path at all
        try:
            path = os.fsdecode(os.fspath(path))
            real = os.path.realpath(os.path.join(os.getcwd(), path))
        except Exception:
            return False
        return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)

    def _deny(event, detail):
        _report(f"{event}: {detail}")
        raise SandboxViolation(f"blocked by the sandbox: {event} ({detail})")

    def _hook(event, args):
        if getattr(_state, "busy", False):
            return
        _state.busy = True
        try:
            if event.startswith("socket."):
                _deny(event, "no network in the sandbox")
            elif event in _BLOCKED:
                _deny(event, repr(args)[:100])
            elif event == "import" and args and str(args[0]).split(".")[0] in _BLOCKED_IMPORTS:
                _deny(event, str(args[0]))
            elif event == "open":
                path, mode, flags = (tuple(args) + (None, None, None))[:3]
                writing = bool((flags or 0) & _WRITE) or any(c in (mode or "") for c in "wax+")
                if writing and not _inside(path, (_tmp,)):
                    _deny("open for writing", repr(path)[:160])
                if not writing and not _inside(path, _readable):
                    _deny("open for reading", repr(path)[:160])
            elif event in ("os.listdir", "os.scandir") and args and not _inside(args[0], _readable):
                _deny(event, repr(args[0])[:160])
            elif event in _MUTATE:
                for i in _MUTATE[event]:
                    if i < len(args) and not _inside(args[i], (_tmp,)):
                        _deny(event, repr(args[i])[:160])
        finally:
            _state.busy = False

    for _name in ("_posixsubprocess", "_ctypes", "ctypes", "_socket", "socket"):
        sys.modules.pop(_name, None)
    sys.addaudithook(_hook)

_module = type(sys)("__main__")
_module.__file__ = "main.py"
sys.modules["__main__"] = _module  # a fresh namespace: the bootstrap's globals stay with its functions
try:
    _code = compile(_source, "main.py", "exec")
    exec(_code, _module.__dict__)
except SystemExit:
    raise
except BaseException as _exc:  # report like the interpreter would, minus this bootstrap's frame
    if isinstance(_exc, MemoryError):
        _report("memory: MemoryError")
    try:
        _te = traceback.TracebackException(type(_exc), _exc, _exc.__traceback__)
        _te.stack = traceback.StackSummary.from_list([f for f in _te.stack if f.filename != "<string>"])
        sys.stderr.write("".join(_te.format()))
    except BaseException:
        sys.stderr.write(f"{type(_exc).__name__}\n")
    sys.stderr.flush()
    sys.exit(1)
""".replace("%(max_reports)d", str(_MAX_REPORTS))


@attrs.frozen
class SandboxResult:
    """What came of one ``run_python`` call.

    ``ok``: exit status 0, no timeout and no blocked operation. ``killed_reason``: why the run failed, if it did:
    ``"timeout"`` (wall clock), ``"cpu"`` (CPU limit), ``"memory"`` (``MemoryError`` reached the top level),
    ``"blocked"`` (the audit hook refused something; ``violations`` lists what), ``"signal:NAME"`` (killed by
    another signal) or ``"exit"`` (non-zero exit status, e.g. an uncaught exception); ``None`` when ``ok``.
    ``isolation``: how the network was closed (``"netns"``, ``"userns+netns"``, ``"audit-hook"``, or ``"none"``
    with the guard off and no namespace). ``privileges``: ``"nobody"`` when root dropped to ``nobody``.
    """

    ok: bool
    stdout: str
    stderr: str
    returncode: int | None
    timed_out: bool
    killed_reason: str | None
    seconds: float
    isolation: str
    privileges: str = "unchanged"
    violations: tuple[str, ...] = ()
    output_truncated: bool = False


@attrs.frozen
class LaunchMode:
    """The command prefix the sandbox starts the interpreter with, and what it achieves (probed once)."""

    prefix: tuple[str, ...]
    isolation: str
    privileges: str


def _probe(prefix: Sequence[str], want_uid: int | None) -> bool:
    """Whether ``prefix + python`` starts and runs as ``want_uid`` (when given) with the standard library readable."""
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-I", "-S", "-B", "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=20,
            cwd="/",
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
        )
    except (OSError, subprocess.SubprocessError):
        return False
    if done.returncode != 0:
        return False
    return want_uid is None or done.stdout.strip() == str(want_uid)


@functools.cache
def launch_mode() -> LaunchMode:
    """Probe once which isolation this machine permits: network namespace, privilege drop, or neither."""
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    candidates: list[LaunchMode] = []
    if os.geteuid() == 0:
        net = ("unshare", "--net", "--")
        if unshare and setpriv:
            candidates.append(LaunchMode((*net, *_SETPRIV), "netns", "nobody"))
        if unshare:
            candidates.append(LaunchMode(net, "netns", "unchanged"))
        if setpriv:
            candidates.append(LaunchMode(_SETPRIV, "audit-hook", "nobody"))
    elif unshare:
        candidates.append(
            LaunchMode(("unshare", "--user", "--map-root-user", "--net", "--"), "userns+netns", "unchanged")
        )
    for mode in candidates:
        if _probe(mode.prefix, NOBODY if mode.privileges == "nobody" else None):
            return mode
    return LaunchMode((), "audit-hook", "unchanged")


def _limits(cpu_s: int, memory_mb: int | None, max_procs: int, file_mb: int, max_files: int) -> str:
    """The resource limits as ``[[RLIMIT_NAME, soft, hard], ...]`` JSON for the bootstrap to apply."""
    mb = 1024 * 1024
    limits = [
        ["RLIMIT_CPU", cpu_s, cpu_s + 1],
        ["RLIMIT_NPROC", max_procs, max_procs],
        ["RLIMIT_FSIZE", file_mb * mb, file_mb * mb],
        ["RLIMIT_NOFILE", max_files, max_files],
        ["RLIMIT_CORE", 0, 0],
    ]
    if memory_mb is not None:
        limits.append(["RLIMIT_AS", memory_mb * mb, memory_mb * mb])
    return json.dumps(limits)


class _Drain(threading.Thread):
    """Reads a pipe to its end, keeping the first ``cap`` bytes (so a chatty child can neither block nor flood us)."""

    def __init__(self, stream: IO[bytes], cap: int) -> None:
        super().__init__(daemon=True)
        self.stream, self.cap = stream, cap
        self.data = bytearray()
        self.truncated = False

    def run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(self.stream.fileno(), 65536):
                room = self.cap - len(self.data)
                if len(chunk) > room:
                    self.truncated = True
                self.data += chunk[: max(room, 0)]

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _feed(stream: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
    with contextlib.suppress(OSError, ValueError):
        stream.close()


def _kill_group(pgid: int) -> bool:
    """SIGKILL every process of the group; False when none is left (zombies still count until reaped)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _reap_group(pgid: int, wait_s: float = 2.0) -> None:
    """Kill the group and wait until it is gone, so its processes stop counting against ``RLIMIT_NPROC``."""
    deadline = time.monotonic() + wait_s
    while _kill_group(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


def run_python(
    code: str,
    *,
    timeout_s: float = 5.0,
    cpu_s: int = 4,
    memory_mb: int | None = 512,
    max_procs: int = 32,
    file_mb: int = 16,
    max_files: int = 64,
    stdin: str | bytes | None = None,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
    guard: bool = True,
    isolate: bool = True,
) -> SandboxResult:
    """Run ``code`` as ``__main__`` of a fresh sandboxed interpreter and report what happened; never raises for
    anything the code does.

    ``guard`` and ``isolate`` exist so the tests can check each layer alone (the audit hook; the namespaces and
    privilege drop); leave them on. ``memory_mb=None`` lifts the address-space limit (sanitizers, not models).
    """
    mode = launch_mode() if isolate else LaunchMode((), "none", "unchanged")
    isolation = mode.isolation if mode.isolation.endswith("netns") else "audit-hook" if guard else "none"
    workdir = tempfile.mkdtemp(prefix="arena-sandbox-")
    report_r, report_w = os.pipe()
    started = time.monotonic()
    try:
        with open(os.path.join(workdir, "main.py"), "w", encoding="utf-8") as handle:
            handle.write(code)
        if mode.privileges == "nobody":
            os.chown(workdir, NOBODY, NOBODY)
        os.chmod(workdir, 0o700)
        argv = [*mode.prefix, sys.executable, "-I", "-S", "-B", "-X", "utf8", "-c", _BOOTSTRAP]
        argv += [
            workdir,
            str(report_w),
            "1" if guard else "0",
            _limits(cpu_s, memory_mb, max_procs, file_mb, max_files),
        ]
        env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=workdir,
            env=env,
            pass_fds=(report_w,),
            start_new_session=True,
        )
        os.close(report_w)
        report_w = -1
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        drains = [_Drain(proc.stdout, max_output_bytes), _Drain(proc.stderr, max_output_bytes)]
        for drain in drains:
            drain.start()
        payload = stdin.encode("utf-8") if isinstance(stdin, str) else (stdin or b"")
        threading.Thread(target=_feed, args=(proc.stdin, payload), daemon=True).start()
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            _kill_group(proc.pid)

        timer = threading.Timer(timeout_s, expire)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        _reap_group(proc.pid)  # forked stragglers die with their leader
        for drain in drains:
            drain.join(timeout=2.0)
            if not drain.is_alive():
                drain.stream.close()
        os.set_blocking(report_r, False)
        reports = b""
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(report_r, 65536):
                reports += chunk
    finally:
        seconds = time.monotonic() - started
        for fd in (report_r, report_w):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        shutil.rmtree(workdir, ignore_errors=True)
    lines = tuple(line for line in reports.decode("utf-8", errors="replace").splitlines() if line)
    memory = any(line.startswith("memory:") for line in lines)
    violations = tuple(line for line in lines if not line.startswith("memory:"))
    stderr = drains[1].text()
    rc = proc.returncode
    timed_out = expired.is_set()
    reason: str | None = None
    if timed_out:
        reason = "timeout"
    elif rc == -signal.SIGXCPU or (rc == -signal.SIGKILL and usage.ru_utime + usage.ru_stime >= cpu_s - 0.5):
        reason = "cpu"
    elif memory or (rc != 0 and "MemoryError" in stderr):
        reason = "memory"
    elif violations:
        reason = "blocked"
    elif rc is not None and rc < 0:
        reason = f"signal:{signal.Signals(-rc).name}" if -rc in signal.valid_signals() else f"signal:{-rc}"
    elif rc != 0:
        reason = "exit"
    return SandboxResult(
        ok=reason is None,
        stdout=drains[0].text(),
        stderr=stderr,
        returncode=rc,
        timed_out=timed_out,
        killed_reason=reason,
        seconds=seconds,
        isolation=isolation,
        privileges=mode.privileges,
        violations=violations,
        output_truncated=drains[0].truncated or drains[1].truncated,
    )
