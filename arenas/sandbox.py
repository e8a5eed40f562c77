"""Run untrusted Python (a model's code) in a sandbox: ``run_python(code) -> SandboxResult``, or several programs
in one sandbox, each in its own process, with ``run_batch``.

The boundary is the operating system, not Python. Layers, outermost first (``tests/arenas/test_sandbox.py`` checks
the OS layers with the audit hook switched off the way an attacker would):

* **bubblewrap** (``bwrap``, ``launch_mode().isolation == "bwrap"``). The sandbox has its own mount, PID, network,
  IPC, UTS (and cgroup) namespaces, ``--die-with-parent`` and ``--new-session``. Its filesystem is an empty tmpfs
  with read-only, ``nosuid`` binds of the interpreter, its standard library (``site-packages`` covered by an empty
  tmpfs), the shared libraries those need (found with ``ldd`` once per process) and ``setpriv``; a fresh ``/proc``
  and ``/dev`` (its ``/dev/shm`` is private); and a private writable tmpfs at ``/tmp`` (64 MiB). The project, the
  hidden tests, ``$HOME``, checkpoints and the host's ``/tmp`` and ``/dev/shm`` are not in its world. The network
  namespace has only a loopback that is down, so not even the host's 127.0.0.1 is reachable.
* **No privileges.** Started as root, bwrap keeps only ``CAP_SETUID``/``CAP_SETGID`` for a small supervisor inside
  (``setpriv`` clears the inheritable set and shrinks the bounding set to those two); it forks one worker per
  program, which becomes ``nobody`` before any of the program's code runs, so the worker's permitted, effective,
  inheritable and ambient capability sets are empty, ``no_new_privs`` is set, and ``RLIMIT_NPROC`` binds (root is
  exempt from it). As another user than the supervisor, a worker can neither signal nor trace it.
* **One process per program.** In a batch the programs run one after the other, each in a fresh fork of the
  supervisor, which never reads a program's code, input or output (they pass between the parent and the worker
  directly), so a worker finds nothing of its neighbours in memory. After each program every process of
  ``nobody`` in the sandbox is killed and the private ``/tmp`` and ``/dev/shm`` are emptied before the next starts;
  the parent tells the outputs apart by when they arrived. A program cannot change another's result.
* **Resource limits** (``setrlimit`` in the worker before the program runs): CPU seconds (``SIGXCPU`` at
  ``cpu_s``, ``SIGKILL`` one second later), address space (``memory_mb``), processes (``max_procs``: a fork bomb
  gets ``EAGAIN``), file size, open files, no core dumps.
* **Wall clock.** At ``timeout_s`` the supervisor kills the worker and everything it started; the parent kills the
  whole sandbox if the supervisor does not answer in time.
* **Audit hook** (``sys.addaudithook`` in the worker, before the program): raises ``SandboxViolation`` (a
  ``PermissionError``) for sockets, ``subprocess``, ``os.system``, ``exec*``, ``fork``, ``kill``, writes outside the
  private directory, reads outside it and the standard library, and importing ``ctypes``; each blocked event is
  reported to the parent through a pipe (``SandboxResult.violations``). It is no boundary (code that reaches the
  hook's state through ``gc`` switches it off); it is there for clear error messages.

Programs talk to the parent on stdout, stderr, and fd 3 (``SandboxResult.channel``), a pipe of their own that the
coding harness reports on, so nothing printed on stdout can pass for a result.

Without bubblewrap the sandbox falls back to the launcher it had before (``unshare --net`` and ``setpriv`` to
``nobody`` with ``CAP_DAC_READ_SEARCH``; ``isolation`` ``"netns"``, ``"userns+netns"`` or ``"audit-hook"``), which
holds only as far as the audit hook does: ``launch_mode().contained`` is False then, and the coding arena refuses to
start without an explicit opt-in. Unprivileged with bubblewrap (``"bwrap+userns"``) every program gets a sandbox of
its own (its workers would share a uid with the supervisor). All layers share the host kernel: a kernel exploit
escapes. Linux only.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Sequence
from typing import IO

import attrs

__all__ = [
    "PLAIN_VALUES",
    "LaunchMode",
    "SandboxResult",
    "describe_isolation",
    "launch_mode",
    "run_batch",
    "run_python",
]

NOBODY = 65534
MAX_OUTPUT_BYTES = 256 * 1024  # per stream; the rest is drained and dropped
MAX_CHANNEL_BYTES = 1024 * 1024
_MAX_REPORTS = 20  # violations a worker reports through its pipe
TMPFS_BYTES = 64 * 1024 * 1024
_STARTUP_S = 10.0  # time the parent allows the sandbox to start, on top of the programs' own limits
_CLEANUP_S = 2.5  # per program: the supervisor's kill-and-wipe after it


# The source of ``plain(v)``, which the coding harnesses (``arenas/coding.py``, ``arenas/humaneval.py``) run inside
# the sandbox: a returned value copied into built-in values through the built-in types' own methods, so that a
# subclass's or a patched ``__repr__``/``__eq__`` cannot change what is compared or reported. A frozenset becomes a
# set, so that the copy's ``repr`` reads back with ``ast.literal_eval`` (and compares equal to the frozenset).
# It raises ``NotPlain``, which each harness defines before it.
PLAIN_VALUES = r"""def plain(v, depth=0):
    if depth > 60:
        raise NotPlain("the value is nested too deeply")
    if v is None or type(v) is bool:
        return v
    if isinstance(v, int):
        return int.__int__(v)
    if isinstance(v, float):
        return float.__float__(v)
    if isinstance(v, str):
        return str.__str__(v)
    if isinstance(v, bytes):
        return bytes.__bytes__(v)
    if isinstance(v, complex):
        return complex.__complex__(v)
    if isinstance(v, dict):
        return {plain(k, depth + 1): plain(x, depth + 1) for k, x in dict.items(v)}
    if isinstance(v, list):
        return [plain(x, depth + 1) for x in list.__iter__(v)]
    if isinstance(v, tuple):
        return tuple(plain(x, depth + 1) for x in tuple.__iter__(v))
    if isinstance(v, set):
        return {plain(x, depth + 1) for x in set.__iter__(v)}
    if isinstance(v, frozenset):
        return {plain(x, depth + 1) for x in frozenset.__iter__(v)}
    raise NotPlain(f"returned a {type(v).__name__} object, not a built-in value")
"""

_SETPRIV = (
    "setpriv",
    f"--reuid={NOBODY}",
    f"--regid={NOBODY}",
    "--clear-groups",
    "--inh-caps=+dac_read_search",
    "--ambient-caps=+dac_read_search",
    "--",
)

# The supervisor: runs in the sandbox, forks one worker per job and reports each job's end on the control pipe.
# argv: [-c, meta as JSON]. fd 0: the jobs' messages (read by the workers only), 1/2: the workers' stdout/stderr.
_SUPERVISOR = r"""

import builtins, fcntl, json, os, select, signal, sys, time, traceback

_meta = json.loads(sys.argv[1])
_NOBODY = _meta["nobody"]
_DROP = _meta["drop"]  # the supervisor is root in the sandbox: each worker becomes nobody
_PIDNS = _meta["pidns"]  # a PID namespace of our own: kill(-1) as nobody reaches only this sandbox's workers
_ROOT = _meta["workroot"]
_control = _meta["control_fd"]
# High copies of the pipes, so the worker can move them to 3 and 4 whatever their numbers are now.
_channel_hi = fcntl.fcntl(_meta["channel_fd"], fcntl.F_DUPFD, 100)
_report_hi = fcntl.fcntl(_meta["report_fd"], fcntl.F_DUPFD, 100)
for _x in (_meta["channel_fd"], _meta["report_fd"]):
    os.close(_x)


def _drop():
    os.setgroups([])
    os.setresgid(_NOBODY, _NOBODY, _NOBODY)
    os.setresuid(_NOBODY, _NOBODY, _NOBODY)  # all uids non-zero: permitted, effective, ambient caps cleared


def _read(n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(0, min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError("the parent closed the job pipe")
        buf += chunk
    return bytes(buf)


def _message(index):
    header = bytearray()
    while not header.endswith(b"\n"):
        header += _read(1)
    got, n_code, n_stdin = (int(x) for x in header.split())
    if got != index:
        raise RuntimeError(f"job pipe out of step: got job {got}, expected {index}")
    return _read(n_code).decode("utf-8"), _read(n_stdin)


def _rm(path):
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
            for name in os.listdir(path):
                _rm(os.path.join(path, name))
            os.rmdir(path)
        else:
            os.unlink(path)
    except OSError:
        pass


def _as_nobody(fn):
    '''Run fn in a child that is nobody (so it may signal and delete what the workers left), and wait for it.'''
    pid = os.fork()
    if pid == 0:
        try:
            _drop()
            fn()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _kill_all():
    '''SIGKILL every process of nobody in this PID namespace but the caller, until none is left (kill(-1)
    reports success while any other process is visible, so /proc says when they are gone).'''
    me = str(os.getpid())
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            return
        left = False
        for name in os.listdir("/proc"):
            if name.isdigit() and name != me:
                try:
                    left = left or os.stat("/proc/" + name).st_uid == _NOBODY
                except OSError:
                    pass
        if not left:
            return
        time.sleep(0.002)


def _wipe():
    _kill_all()
    for root in (_ROOT, "/dev/shm"):
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            _rm(os.path.join(root, name))


def _kill_group(pgid):
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.002)


def _worker(index, job):
    '''The forked child: its own session, files and limits, nobody, the audit hook, then the code as __main__.'''
    status = 70
    try:
        os.setsid()
        source, stdin = _message(index)
        os.dup2(_channel_hi, 3)
        os.dup2(_report_hi, 4)
        os.closerange(5, 4096)
        if _DROP:
            _drop()
        tmp = os.path.join(_ROOT, f"arena-sandbox-{index}")
        os.mkdir(tmp, 0o700)
        with open(os.path.join(tmp, "main.py"), "w", encoding="utf-8") as f:
            f.write(source)
        with open(os.path.join(tmp, ".stdin"), "wb") as f:
            f.write(stdin)
        fd = os.open(os.path.join(tmp, ".stdin"), os.O_RDONLY)
        os.unlink(os.path.join(tmp, ".stdin"))
        os.dup2(fd, 0)
        os.close(fd)
        os.chdir(tmp)
        os.environ.clear()
        os.environ.update({"PATH": "/usr/bin:/bin", "HOME": tmp, "TMPDIR": tmp, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"})
        import resource
        for name, soft, hard in job["limits"]:
            which = getattr(resource, name)
            old = resource.getrlimit(which)[1]
            if old != resource.RLIM_INFINITY:
                hard = min(hard, old)
            resource.setrlimit(which, (min(soft, hard), hard))
        status = _run(tmp, source, job["guard"])
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        try:
            sys.stderr.write("sandbox worker failed:\n" + traceback.format_exc())
        except BaseException:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(status & 0xFF if isinstance(status, int) else 1)


def _run(_tmp, _source, _guard):
    _fd = 4
    sys.argv = ["main.py"]
    builtins.exit = builtins.quit = sys.exit

    class SandboxViolation(PermissionError):
        '''An operation the sandbox forbids (network, processes, files outside the temp dir, ctypes).'''

    SandboxViolation.__qualname__ = "SandboxViolation"
    builtins.SandboxViolation = SandboxViolation
    _reported = [0]

    def _report(text):
        if _reported[0] < _meta["max_reports"]:
            _reported[0] += 1
            try:
                os.write(_fd, (text.replace("\n", " ")[:300] + "\n").encode("utf-8", "replace"))
            except OSError:
                pass

    if _guard:
        import threading

        _readable = tuple(_meta["readable"]) + (
            _tmp, "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/proc/self", "/etc/localtime",
            "/usr/share/zoneinfo",
        )
        _WRITE = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
        _BLOCKED = {
            "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill", "os.killpg",
            "subprocess.Popen", "pty.spawn", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata",
            "ctypes.call_function", "sys.remote_exec", "os.setuid", "os.setgid", "resource.setrlimit",
            "resource.prlimit",
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
    sys.modules["__main__"] = _module  # a fresh namespace: the supervisor's globals stay with its functions
    try:
        exec(compile(_source, "main.py", "exec"), _module.__dict__)
    except SystemExit:
        raise
    except BaseException as _exc:  # report like the interpreter would, minus the supervisor's frames
        if isinstance(_exc, MemoryError):
            _report("memory: MemoryError")
        try:
            _te = traceback.TracebackException(type(_exc), _exc, _exc.__traceback__)
            _te.stack = traceback.StackSummary.from_list([f for f in _te.stack if f.filename != "<string>"])
            sys.stderr.write("".join(_te.format()))
        except BaseException:
            sys.stderr.write(f"{type(_exc).__name__}\n")
        return 1
    return 0


for _index, _job in enumerate(_meta["jobs"]):
    _started = time.monotonic()
    _pid = os.fork()
    if _pid == 0:
        _worker(_index, _job)
    _pidfd = os.pidfd_open(_pid)
    _timed_out = not select.select([_pidfd], [], [], _job["timeout_s"])[0]
    if _timed_out:
        if _PIDNS and _DROP:
            _as_nobody(lambda: os.kill(-1, signal.SIGKILL))
        else:
            _kill_group(_pid)
    _, _status, _usage = os.wait4(_pid, 0)
    os.close(_pidfd)
    _seconds = time.monotonic() - _started
    if _PIDNS and _DROP:
        _as_nobody(_wipe)  # no process, file or shared-memory object of this job is left for the next one
    else:
        _kill_group(_pid)
        _rm(os.path.join(_ROOT, f"arena-sandbox-{_index}"))
    _done = {"job": _index, "status": _status, "cpu": _usage.ru_utime + _usage.ru_stime, "timed_out": _timed_out,
             "seconds": _seconds}
    os.write(_control, (json.dumps(_done) + "\n").encode())
"""


@attrs.frozen
class SandboxResult:
    """What came of one program.

    ``ok``: exit status 0, no timeout and no blocked operation. ``killed_reason``: why the run failed, if it did:
    ``"timeout"`` (wall clock), ``"cpu"`` (CPU limit), ``"memory"`` (``MemoryError`` reached the top level),
    ``"blocked"`` (the audit hook refused something; ``violations`` lists what), ``"signal:NAME"`` (killed by
    another signal), ``"exit"`` (non-zero exit status, e.g. an uncaught exception) or ``"sandbox"`` (the sandbox
    itself failed; ``stderr`` says why); ``None`` when ``ok``. ``isolation``: the launcher (``"bwrap"``,
    ``"bwrap+userns"``, ``"netns"``, ``"userns+netns"``, ``"audit-hook"``, or ``"none"`` with the guard off and no
    isolation). ``privileges``: ``"nobody"`` when the program ran as ``nobody``. ``channel``: what the program wrote
    to fd 3.
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
    channel: str = ""


@attrs.frozen
class LaunchMode:
    """How the sandbox is started, and what that achieves (probed once per process).

    ``prefix``: the command before the interpreter. ``drop``: the supervisor is root and makes each worker
    ``nobody``. ``pidns``: the sandbox has a PID namespace of its own. ``batch``: several programs may share one
    sandbox (each worker is another user than the supervisor). ``contained``: the OS confines the filesystem,
    network and processes, whatever the code does to the audit hook.
    """

    prefix: tuple[str, ...]
    isolation: str
    privileges: str
    drop: bool = False
    pidns: bool = False
    batch: bool = False
    contained: bool = False
    private_tmp: bool = False


def _base_paths() -> dict[str, str]:
    """sysconfig's paths of the base interpreter (not of a virtual environment)."""
    return sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})


def _stdlib_dirs() -> list[str]:
    paths = _base_paths()
    return sorted({os.path.realpath(paths[k]) for k in ("stdlib", "platstdlib")})


def _libraries(binaries: Sequence[str]) -> list[str]:
    """The shared libraries (and the dynamic loader) ``binaries`` load, by one ``ldd`` call."""
    ldd = shutil.which("ldd")
    if not ldd or not binaries:
        return []
    try:
        done = subprocess.run([ldd, *binaries], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []
    found = set()
    for line in done.stdout.splitlines():
        for word in line.split():
            if word.startswith("/") and not word.endswith(":") and os.path.exists(word):
                found.add(word)
    return sorted(found - set(binaries))


def _bwrap_prefix(root: bool) -> tuple[str, ...]:
    """bubblewrap's arguments: namespaces, no capabilities, read-only binds of the interpreter, its standard library
    and their shared libraries, fresh /proc and /dev, a private tmpfs at /tmp."""
    exe = os.path.realpath(sys.executable)
    stdlib = _stdlib_dirs()
    setpriv = shutil.which("setpriv") if root else None
    setpriv = os.path.realpath(setpriv) if setpriv else None
    modules = [
        p
        for d in stdlib
        for p in glob.glob(os.path.join(d, "lib-dynload", "*.so"))
        if "tkinter" not in os.path.basename(p)  # Tk pulls X11 in; no sandboxed program draws windows
    ]
    files = [exe, *([setpriv] if setpriv else []), *_libraries([exe, *([setpriv] if setpriv else []), *modules])]
    if os.path.exists("/etc/ld.so.cache"):
        files.append("/etc/ld.so.cache")
    args: list[str] = ["bwrap", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts"]
    args += ["--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    args += ["--unshare-user"] if not root else []
    args += ["--cap-drop", "ALL"]
    if root:
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    made: set[str] = {"/"}

    def parents(path: str) -> None:
        parts = path.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/" + "/".join(parts[:i])
            if d not in made:
                made.add(d)
                args.extend(["--perms", "0755", "--dir", d])

    def expose(path: str) -> str:
        """Recreate the symlinks on the way to ``path`` (``/lib -> usr/lib``); the real path to bind."""
        real = "/"
        for part in path.strip("/").split("/"):
            step = os.path.join(real, part)
            if os.path.islink(step):
                target = os.path.realpath(step)
                if step not in made:
                    parents(step)
                    made.add(step)
                    args.extend(["--symlink", os.readlink(step), step])
                real = target
            else:
                real = step
        return real

    # Whole directories for the shared libraries (few mounts: each costs start-up time), single files else.
    dirs = {expose(os.path.dirname(f)) for f in files if f not in (exe, setpriv) and not f.startswith("/etc/")}
    dirs |= {expose(d) for d in stdlib}
    keep = sorted(d for d in dirs if not any(d.startswith(o + "/") for o in dirs))
    binds = [(d, d) for d in keep]
    for f in sorted(set(files)):
        dest = os.path.join(expose(os.path.dirname(f)), os.path.basename(f))
        if not any(dest.startswith(d + "/") for d in keep):
            binds.append((os.path.realpath(f), dest))
    for source, dest in binds:
        parents(dest)
        args.extend(["--ro-bind", source, dest])
        made.add(dest)
    for key in ("purelib", "platlib"):  # site-packages inside the standard library: hidden
        site = os.path.realpath(_base_paths()[key])
        if any(site.startswith(d + "/") for d in stdlib) and os.path.isdir(site) and site not in made:
            made.add(site)
            args.extend(["--tmpfs", site, "--remount-ro", site])
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp"]
    args += ["--chdir", "/tmp", "--"]
    if setpriv:
        args += [setpriv, "--inh-caps=-all", "--bounding-set=-all,+setuid,+setgid", "--"]
    return tuple(args)


def _probe(prefix: Sequence[str], want_uid: int | None) -> bool:
    """Whether ``prefix + python`` starts and runs as ``want_uid`` (when given) with the standard library readable."""
    try:
        done = subprocess.run(
            [*prefix, os.path.realpath(sys.executable), "-I", "-S", "-B", "-c", "import json, os\nprint(os.getuid())"],
            capture_output=True,
            text=True,
            timeout=20,
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.SubprocessError):
        return False
    if done.returncode != 0:
        return False
    return want_uid is None or done.stdout.strip() == str(want_uid)


@functools.cache
def launch_modes() -> dict[str, LaunchMode]:
    """Every launcher that works on this machine, best first: bubblewrap, then the legacy namespaces."""
    modes: dict[str, LaunchMode] = {}
    root = os.geteuid() == 0
    if shutil.which("bwrap"):
        prefix = _bwrap_prefix(root)
        if root and _probe(prefix, 0):
            modes["bwrap"] = LaunchMode(prefix, "bwrap", "nobody", True, True, True, True, True)
        elif not root and _probe(prefix, None):
            modes["bwrap"] = LaunchMode(prefix, "bwrap+userns", "unchanged", False, True, False, True, True)
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    legacy: list[LaunchMode] = []
    if root:
        net = ("unshare", "--net", "--")
        if unshare and setpriv:
            legacy.append(LaunchMode((*net, *_SETPRIV), "netns", "nobody"))
        if unshare:
            legacy.append(LaunchMode(net, "netns", "unchanged"))
        if setpriv:
            legacy.append(LaunchMode(_SETPRIV, "audit-hook", "nobody"))
    elif unshare:
        legacy.append(LaunchMode(("unshare", "--user", "--map-root-user", "--net", "--"), "userns+netns", "unchanged"))
    for mode in legacy:
        if _probe(mode.prefix, NOBODY if mode.privileges == "nobody" else None):
            modes["legacy"] = mode
            break
    else:
        modes["legacy"] = LaunchMode((), "audit-hook", "unchanged")
    return modes


def launch_mode(launcher: str | None = None) -> LaunchMode:
    """The launcher ``run_python`` uses: bubblewrap where it works, else the legacy one (``launcher`` picks one:
    ``"bwrap"`` or ``"legacy"``; ``KeyError`` when that one does not work here)."""
    modes = launch_modes()
    if launcher is not None:
        return modes[launcher]
    return modes.get("bwrap", modes["legacy"])


def describe_isolation(mode: LaunchMode | None = None) -> str:
    """One line on what the sandbox gets on this machine."""
    mode = mode or launch_mode()
    if mode.isolation == "bwrap":
        return (
            "sandbox: bubblewrap (mount, pid, net, ipc, uts namespaces; interpreter and stdlib read-only; private "
            "tmpfs; no capabilities; runs as nobody) + rlimits + audit hook"
        )
    if mode.isolation == "bwrap+userns":
        return "sandbox: bubblewrap in a user namespace (mount, pid, net, ipc, uts; no capabilities) + rlimits + hook"
    return (
        f"sandbox: NO filesystem/process isolation (bubblewrap unavailable; {mode.isolation}, privileges "
        f"{mode.privileges}): only the audit hook and rlimits stand between model code and this machine"
    )


def _limits(cpu_s: int, memory_mb: int | None, max_procs: int, file_mb: int, max_files: int) -> list[list[object]]:
    """The resource limits as ``[[RLIMIT_NAME, soft, hard], ...]`` for the worker to apply."""
    mb = 1024 * 1024
    limits: list[list[object]] = [
        ["RLIMIT_CPU", cpu_s, cpu_s + 1],
        ["RLIMIT_NPROC", max_procs, max_procs],
        ["RLIMIT_FSIZE", file_mb * mb, file_mb * mb],
        ["RLIMIT_NOFILE", max_files, max_files],
        ["RLIMIT_CORE", 0, 0],
    ]
    if memory_mb is not None:
        limits.append(["RLIMIT_AS", memory_mb * mb, memory_mb * mb])
    return limits


def _feed(stream: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
        stream.flush()


def _encode(text: str | bytes | None) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else (text or b"")


class _Job:
    """The parent's view of one program while the sandbox runs: its message and what came back."""

    def __init__(self, index: int, code: str, stdin: str | bytes | None, cap: int) -> None:
        code_bytes, stdin_bytes = code.encode("utf-8"), _encode(stdin)
        self.message = f"{index} {len(code_bytes)} {len(stdin_bytes)}\n".encode() + code_bytes + stdin_bytes
        self.caps = {"stdout": cap, "stderr": cap, "report": 64 * 1024, "channel": MAX_CHANNEL_BYTES}
        self.data: dict[str, bytearray] = {name: bytearray() for name in self.caps}
        self.truncated = False
        self.done: dict[str, object] | None = None
        self.writer: threading.Thread | None = None

    def add(self, name: str, chunk: bytes) -> None:
        room = self.caps[name] - len(self.data[name])
        if len(chunk) > room:
            self.truncated = self.truncated or name in ("stdout", "stderr")
        self.data[name] += chunk[: max(room, 0)]

    def start(self, stream: IO[bytes]) -> None:
        self.writer = threading.Thread(target=_feed, args=(stream, self.message), daemon=True)
        self.writer.start()


def _result(job: _Job, mode: LaunchMode, isolation: str, cpu_s: int, expired: bool) -> SandboxResult:
    """Judge one program from its end record (None: the sandbox never reported it) and what it wrote."""
    text = {name: bytes(buf).decode("utf-8", errors="replace") for name, buf in job.data.items()}
    lines = tuple(line for line in text["report"].splitlines() if line)
    memory = any(line.startswith("memory:") for line in lines)
    violations = tuple(line for line in lines if not line.startswith("memory:"))
    done = job.done
    rc: int | None = None
    timed_out = expired
    seconds = 0.0
    reason: str | None
    if done is not None:
        rc = os.waitstatus_to_exitcode(int(done["status"]))  # type: ignore[call-overload]
        timed_out = bool(done["timed_out"])
        seconds = float(done["seconds"])  # type: ignore[arg-type]
        cpu = float(done["cpu"])  # type: ignore[arg-type]
    if timed_out:
        reason = "timeout"
    elif done is None:
        reason = "sandbox"
    elif rc == -signal.SIGXCPU or (rc == -signal.SIGKILL and cpu >= cpu_s - 0.5):
        reason = "cpu"
    elif memory or (rc != 0 and "MemoryError" in text["stderr"]):
        reason = "memory"
    elif violations:
        reason = "blocked"
    elif rc is not None and rc < 0:
        reason = f"signal:{signal.Signals(-rc).name}" if -rc in signal.valid_signals() else f"signal:{-rc}"
    elif rc != 0:
        reason = "exit"
    else:
        reason = None
    return SandboxResult(
        ok=reason is None,
        stdout=text["stdout"],
        stderr=text["stderr"],
        returncode=rc,
        timed_out=timed_out,
        killed_reason=reason,
        seconds=seconds,
        isolation=isolation,
        privileges="nobody" if mode.drop or mode.privileges == "nobody" else "unchanged",
        violations=violations,
        output_truncated=job.truncated,
        channel=text["channel"],
    )


def _one_sandbox(
    programs: Sequence[tuple[str, str | bytes | None]],
    mode: LaunchMode,
    isolation: str,
    *,
    timeout_s: float,
    cpu_s: int,
    limits: list[list[object]],
    max_output_bytes: int,
    guard: bool,
) -> list[SandboxResult]:
    jobs = [_Job(i, code, stdin, max_output_bytes) for i, (code, stdin) in enumerate(programs)]
    pipes = {name: os.pipe() for name in ("report", "channel", "control")}
    host_tmp = None if mode.private_tmp else tempfile.mkdtemp(prefix="arena-sandbox-")
    meta = {
        "nobody": NOBODY,
        "drop": mode.drop,
        "pidns": mode.pidns,
        "workroot": "/tmp" if host_tmp is None else host_tmp,
        "control_fd": pipes["control"][1],
        "channel_fd": pipes["channel"][1],
        "report_fd": pipes["report"][1],
        "max_reports": _MAX_REPORTS,
        "readable": sorted({os.path.dirname(p) for p in _stdlib_dirs()}),
        "jobs": [{"timeout_s": timeout_s, "limits": limits, "guard": guard} for _ in jobs],
    }
    expired = False
    proc: subprocess.Popen[bytes] | None = None
    selector: selectors.BaseSelector | None = None
    try:
        if host_tmp is not None:
            if mode.privileges == "nobody":
                os.chown(host_tmp, NOBODY, NOBODY)
            os.chmod(host_tmp, 0o700)
        argv = [*mode.prefix, os.path.realpath(sys.executable), "-I", "-S", "-B", "-X", "utf8", "-c", _SUPERVISOR]
        proc = subprocess.Popen(
            [*argv, json.dumps(meta)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd="/" if host_tmp is None else host_tmp,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
            pass_fds=tuple(w for _, w in pipes.values()),
            start_new_session=True,
        )
        for name, (r, w) in list(pipes.items()):
            os.close(w)
            pipes[name] = (r, -1)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        streams = {
            proc.stdout.fileno(): "stdout",
            proc.stderr.fileno(): "stderr",
            pipes["report"][0]: "report",
            pipes["channel"][0]: "channel",
        }
        control = pipes["control"][0]
        selector = selectors.DefaultSelector()
        for fd in (*streams, control):
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        open_fds = set(streams) | {control}
        current = 0
        pending = b""
        deadline = time.monotonic() + _STARTUP_S + len(jobs) * (timeout_s + _CLEANUP_S)
        jobs[0].start(proc.stdin)

        def drain(fd: int) -> bool:
            """Read what ``fd`` holds now; False at its end."""
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    return True
                except OSError:
                    chunk = b""
                if not chunk:
                    return False
                if current < len(jobs):
                    jobs[current].add(streams[fd], chunk)

        while current < len(jobs) and control in open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                expired = True
                break
            for key, _ in selector.select(timeout=min(left, 1.0)):
                fd = int(key.fd)
                if fd not in open_fds:  # closed earlier in this round (the control channel drains the streams)
                    continue
                if fd in streams:
                    if not drain(fd):
                        selector.unregister(fd)
                        open_fds.discard(fd)
                    continue
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(fd)
                    open_fds.discard(fd)
                    continue
                pending += chunk
                while b"\n" in pending and current < len(jobs):
                    line, pending = pending.split(b"\n", 1)
                    # Every process of this job is gone: what the pipes hold now is all it wrote.
                    for stream_fd in list(streams):
                        if stream_fd in open_fds and not drain(stream_fd):
                            selector.unregister(stream_fd)
                            open_fds.discard(stream_fd)
                    jobs[current].done = json.loads(line)
                    writer = jobs[current].writer
                    if writer is not None:
                        writer.join(timeout=1.0)
                    current += 1
                    if writer is not None and writer.is_alive():
                        break  # its message was not read to the end: the pipe is out of step, stop here
                    if current < len(jobs):
                        jobs[current].start(proc.stdin)
        if current < len(jobs):  # the sandbox failed or ran out of time: what it wrote goes to that program
            for fd in list(open_fds - {control}):
                drain(fd)
    finally:
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(OSError, ValueError):
                assert proc.stdin is not None
                proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        if selector is not None:
            selector.close()
        for r, w in pipes.values():
            for fd in (r, w):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
        if host_tmp is not None:
            shutil.rmtree(host_tmp, ignore_errors=True)
    return [_result(job, mode, isolation, cpu_s, expired and job.done is None) for job in jobs]


def run_batch(
    programs: Sequence[tuple[str, str | bytes | None]],
    *,
    timeout_s: float = 5.0,
    cpu_s: int = 4,
    memory_mb: int | None = 512,
    max_procs: int = 32,
    file_mb: int = 16,
    max_files: int = 64,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
    guard: bool = True,
    isolate: bool = True,
    launcher: str | None = None,
) -> list[SandboxResult]:
    """Run each ``(code, stdin)`` as ``__main__`` of its own sandboxed process and report what happened, one result
    per program, in order; never raises for anything the code does. ``timeout_s`` and the limits apply to each
    program. Where the launcher allows it (``LaunchMode.batch``) the programs share one sandbox, one after the
    other, each in a fresh worker; else each gets a sandbox of its own.

    ``guard`` and ``isolate`` exist so the tests can check each layer alone (the audit hook; the OS isolation);
    leave them on. ``launcher`` picks ``"bwrap"`` or ``"legacy"`` (benchmarks). ``memory_mb=None`` lifts the
    address-space limit.
    """
    if not programs:
        return []
    mode = launch_mode(launcher) if isolate else LaunchMode((), "none", "unchanged")
    isolation = (
        mode.isolation if (mode.contained or mode.isolation.endswith("netns")) else ("audit-hook" if guard else "none")
    )
    options = {
        "timeout_s": timeout_s,
        "cpu_s": cpu_s,
        "limits": _limits(cpu_s, memory_mb, max_procs, file_mb, max_files),
        "max_output_bytes": max_output_bytes,
        "guard": guard,
    }
    if mode.batch:
        return _one_sandbox(programs, mode, isolation, **options)  # type: ignore[arg-type]
    return [_one_sandbox([p], mode, isolation, **options)[0] for p in programs]  # type: ignore[arg-type]


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
    launcher: str | None = None,
) -> SandboxResult:
    """Run ``code`` as ``__main__`` of a fresh sandboxed process (see ``run_batch``)."""
    return run_batch(
        [(code, stdin)],
        timeout_s=timeout_s,
        cpu_s=cpu_s,
        memory_mb=memory_mb,
        max_procs=max_procs,
        file_mb=file_mb,
        max_files=max_files,
        max_output_bytes=max_output_bytes,
        guard=guard,
        isolate=isolate,
        launcher=launcher,
    )[0]
