"""The sandbox contains what a model's code may do: loops, fork bombs, memory hogs, stray writes, network calls.

Each attack is run with every layer on, and again with one layer off where the other layer alone must still hold
(``guard=False``: namespaces, privilege drop and rlimits only; ``isolate=False``: the audit hook only), so removing
any single protection makes a test here fail.
"""

from __future__ import annotations

import os
import socket
import textwrap
import time
from pathlib import Path

import pytest

from arena.arenas.sandbox import launch_mode, run_python

MODE = launch_mode()
NETNS = MODE.isolation.endswith("netns")
# RLIMIT_NPROC does not bind root; it binds when the sandbox drops to nobody or runs unprivileged anyway.
NPROC_BINDS = MODE.privileges == "nobody" or os.geteuid() != 0
needs_netns = pytest.mark.skipif(not NETNS, reason="no network namespace on this machine")
needs_nproc = pytest.mark.skipif(not NPROC_BINDS, reason="root without setpriv: RLIMIT_NPROC does not bind")
needs_nobody = pytest.mark.skipif(MODE.privileges != "nobody", reason="the sandbox does not drop to nobody here")


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for a reaper (it runs no code any more)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")


def test_normal_program_returns_stdout() -> None:
    result = run_python("import math\nprint(math.gcd(12, 18))\nprint(input().upper())", stdin="hello\n")
    assert result.ok and result.returncode == 0 and result.killed_reason is None
    assert result.stdout == "6\nHELLO\n"
    assert result.isolation in {"netns", "userns+netns", "audit-hook"}


def test_exception_is_reported_with_the_users_traceback() -> None:
    result = run_python("def f():\n    return 1 / 0\nf()\n")
    assert not result.ok and result.killed_reason == "exit" and result.returncode == 1
    assert 'File "main.py", line 2, in f' in result.stderr and "ZeroDivisionError" in result.stderr
    assert "_hook" not in result.stderr


def test_private_temp_dir_is_cwd_home_and_deleted() -> None:
    code = "import os\nopen('x.txt', 'w').write('ok')\nprint(os.getcwd(), os.environ['HOME'], os.environ['TMPDIR'])"
    result = run_python(code)
    assert result.ok, result.stderr
    cwd, home, tmp = result.stdout.split()
    assert cwd == home == tmp and "arena-sandbox-" in cwd
    assert not Path(cwd).exists()


def test_endless_loop_times_out() -> None:
    started = time.monotonic()
    result = run_python("while True:\n    pass\n", timeout_s=1.0, cpu_s=30)
    assert result.timed_out and not result.ok and result.killed_reason == "timeout"
    assert time.monotonic() - started < 5


def test_cpu_limit_kills_a_busy_loop_before_the_wall_clock() -> None:
    result = run_python("while True:\n    pass\n", timeout_s=20.0, cpu_s=1)
    assert not result.ok and not result.timed_out and result.killed_reason == "cpu"
    assert result.seconds < 10


FORK_BOMB = textwrap.dedent(
    """
    import os, time
    children = []
    try:
        for _ in range(500):
            pid = os.fork()
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            children.append(pid)
            print("child", pid, flush=True)
    except OSError as exc:
        print("fork failed:", type(exc).__name__, exc, flush=True)
    if children:
        time.sleep(60)
    """
)

MP_BOMB = textwrap.dedent(
    """
    import multiprocessing, time
    children = []
    try:
        for _ in range(500):
            p = multiprocessing.Process(target=time.sleep, args=(60,))
            p.start()
            children.append(p)
            print("child", p.pid, flush=True)
    except Exception as exc:
        print("start failed:", type(exc).__name__, exc, flush=True)
    if children:
        time.sleep(60)
    """
)


def _children(stdout: str) -> list[int]:
    return [int(line.split()[1]) for line in stdout.splitlines() if line.startswith("child ")]


@pytest.mark.parametrize("code", [FORK_BOMB, MP_BOMB], ids=["os.fork", "multiprocessing"])
def test_fork_bomb_is_blocked_by_the_guard(code: str) -> None:
    result = run_python(code, timeout_s=2.0)
    assert not result.ok and _children(result.stdout) == []
    assert "failed: SandboxViolation" in result.stdout
    assert result.killed_reason == "blocked" and result.violations and not result.timed_out


@needs_nproc
@pytest.mark.parametrize("code", [FORK_BOMB, MP_BOMB], ids=["os.fork", "multiprocessing"])
def test_fork_bomb_is_contained_by_the_process_limit(code: str) -> None:
    """With the audit hook off, RLIMIT_NPROC stops the forks and the group kill reaps every child."""
    result = run_python(code, timeout_s=1.5, max_procs=8, guard=False)
    children = _children(result.stdout)
    assert "failed: BlockingIOError" in result.stdout, result.stdout + result.stderr
    assert len(children) < 8 and result.seconds < 5
    deadline = time.monotonic() + 2
    while not all(_dead(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(_dead(pid) for pid in children)


def test_memory_hog_fails_with_memory_reason() -> None:
    result = run_python("x = bytearray(4 * 1024**3)\nprint('allocated')\n", memory_mb=512)
    assert not result.ok and result.killed_reason == "memory"
    assert "allocated" not in result.stdout and "MemoryError" in result.stderr


def _write_code(target: Path) -> str:
    return f"open({str(target)!r}, 'w').write('escaped')\nprint('wrote')\n"


def test_write_outside_temp_dir_is_blocked(tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    result = run_python(_write_code(target))
    assert not result.ok and result.killed_reason == "blocked"
    assert "SandboxViolation" in result.stderr and "wrote" not in result.stdout
    assert not target.exists()


@pytest.mark.parametrize(
    "code",
    ["import os\nos.remove({p!r})", "import os\nos.rename({p!r}, 'stolen')", "import os\nos.chmod({p!r}, 0o777)"],
)
def test_other_changes_outside_temp_dir_are_blocked(tmp_path: Path, code: str) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("mine")
    mode = target.stat().st_mode
    result = run_python(code.format(p=str(target)))
    assert result.killed_reason == "blocked"
    assert target.read_text() == "mine" and target.stat().st_mode == mode


@needs_nobody
def test_write_outside_is_refused_by_the_os_without_the_guard(tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    result = run_python(_write_code(target), guard=False)
    assert not result.ok and "PermissionError" in result.stderr
    assert not target.exists()


def test_reading_project_files_is_blocked() -> None:
    path = Path(__file__).resolve()
    result = run_python(f"print(open({str(path)!r}).read()[:20])")
    assert result.killed_reason == "blocked" and result.stdout == ""


@pytest.mark.parametrize(
    "code",
    [
        "import os\nos.system('true')",
        "import subprocess\nsubprocess.run(['true'])",
        "import ctypes",
        "import os\nos.execv('/bin/true', ['true'])",
        "import resource\nresource.setrlimit(resource.RLIMIT_CPU, (100, 100))",
    ],
)
def test_processes_and_ctypes_are_blocked(code: str) -> None:
    result = run_python(code)
    assert result.killed_reason == "blocked" and result.violations


def _listener() -> socket.socket:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.3)
    return server


def _connect_code(port: int) -> str:
    return (
        f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "s.sendall(b'hi')\nprint('connected')\n"
    )


def _saw_connection(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except TimeoutError:
        return False
    conn.close()
    return True


@pytest.mark.parametrize("guard,isolate", [(True, True), (True, False)], ids=["all-layers", "guard-only"])
def test_network_call_is_blocked_by_the_guard(guard: bool, isolate: bool) -> None:
    with _listener() as server:
        result = run_python(_connect_code(server.getsockname()[1]), guard=guard, isolate=isolate)
        assert not result.ok and result.killed_reason == "blocked" and "connected" not in result.stdout
        assert not _saw_connection(server)


@needs_netns
def test_network_call_fails_in_the_namespace_without_the_guard() -> None:
    with _listener() as server:
        result = run_python(_connect_code(server.getsockname()[1]), guard=False)
        assert result.isolation.endswith("netns")
        assert not result.ok and result.killed_reason == "exit" and "connected" not in result.stdout
        assert "unreachable" in result.stderr or "refused" in result.stderr, result.stderr
        assert not _saw_connection(server)


def test_the_listener_does_see_an_unsandboxed_connection() -> None:
    """Control for the network tests: the same client code connects when nothing stops it."""
    with _listener() as server:
        result = run_python(_connect_code(server.getsockname()[1]), guard=False, isolate=False)
        assert result.ok and "connected" in result.stdout and result.isolation == "none"
        assert _saw_connection(server)


def test_output_is_capped() -> None:
    result = run_python(
        "import sys\nfor _ in range(2000):\n    sys.stdout.write('x' * 1000)\n", max_output_bytes=10_000
    )
    assert result.ok and result.output_truncated and len(result.stdout) == 10_000
