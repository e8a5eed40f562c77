"""The sandbox contains what a model's code may do: loops, fork bombs, memory hogs, stray writes, network calls,
and deliberate attacks.

Each attack is run with every layer on, and again with one layer off where the other layer alone must still hold
(``guard=False``: the OS layers only; ``isolate=False``: the audit hook only), so removing any single protection
makes a test here fail. The attacks of ``test_attack_*`` first switch the audit hook off from inside, as an attacker
would (through ``gc``), check that it is off, and then must be stopped by the OS layer alone.
"""

from __future__ import annotations

import contextlib
import os
import socket
import textwrap
import time
from pathlib import Path

import pytest

from arena.arenas.sandbox import SandboxResult, launch_mode, run_batch, run_python

MODE = launch_mode()
NETNS = MODE.isolation.endswith("netns") or MODE.contained
BWRAP = MODE.isolation == "bwrap"
# RLIMIT_NPROC does not bind root; it binds when the sandbox drops to nobody or runs unprivileged anyway.
NPROC_BINDS = MODE.privileges == "nobody" or os.geteuid() != 0
needs_netns = pytest.mark.skipif(not NETNS, reason="no network namespace on this machine")
needs_nproc = pytest.mark.skipif(not NPROC_BINDS, reason="root without setpriv: RLIMIT_NPROC does not bind")
needs_nobody = pytest.mark.skipif(MODE.privileges != "nobody", reason="the sandbox does not drop to nobody here")
needs_bwrap = pytest.mark.skipif(not BWRAP, reason="bubblewrap as root is not available here (make sandbox-tools)")


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for a reaper (it runs no code any more)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")


def _nobody_processes() -> list[str]:
    """Live processes of ``nobody`` on the host (the sandbox's workers), waiting up to 2 s for them to go."""
    deadline = time.monotonic() + 2
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and entry.stat().st_uid == 65534 and not _dead(int(entry.name)):
                    found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_normal_program_returns_stdout() -> None:
    result = run_python("import math\nprint(math.gcd(12, 18))\nprint(input().upper())", stdin="hello\n")
    assert result.ok and result.returncode == 0 and result.killed_reason is None
    assert result.stdout == "6\nHELLO\n"
    assert result.isolation in {"bwrap", "bwrap+userns", "netns", "userns+netns", "audit-hook"}


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
    again = run_python("import os\nprint(sorted(os.listdir('.')))")
    assert again.ok and again.stdout.strip() == "['main.py']"  # nothing of the earlier run is left


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
    if BWRAP:  # the children's pids are the sandbox's own: look for any process of nobody on the host instead
        assert _nobody_processes() == []
        return
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
    assert not result.ok and ("PermissionError" in result.stderr or "FileNotFoundError" in result.stderr)
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
        assert result.isolation.endswith("netns") or result.isolation.startswith("bwrap")
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


# ----------------------------------------------------------------- deliberate code, with the audit hook switched off

# What an attacker does first: find the hook's re-entrancy flag through gc and set it, so the hook returns at once
# for every later event of this thread. Then prove it is off (a read the hook forbids, importing ctypes).
HOOK_OFF = textwrap.dedent(
    """
    import gc, threading
    for _o in gc.get_objects():
        if type(_o) is threading.local:
            _o.busy = True
    open("/proc/version").read()
    import ctypes
    print("HOOK-OFF", flush=True)
    """
)


def _attack(code: str, **kwargs: object) -> SandboxResult:
    result = run_python(HOOK_OFF + textwrap.dedent(code), **kwargs)  # type: ignore[arg-type]
    assert "HOOK-OFF" in result.stdout, result.stdout + result.stderr  # the OS layer alone faced what follows
    assert result.violations == ()
    return result


def _try_each(paths: list[str]) -> str:
    """Code that tries to read each path and prints what it got (or the error)."""
    return textwrap.dedent(
        f"""
        for p in {paths!r}:
            try:
                with open(p, "rb") as f:
                    print("READ", p, f.read(4000))
            except OSError as exc:
                print("DENIED", p, type(exc).__name__)
        """
    )


@pytest.fixture
def root_only_file(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-0600")
    secret.chmod(0o600)
    return secret


def test_the_attack_reads_a_root_only_file_without_isolation(root_only_file: Path) -> None:
    """Control: with the OS layer off, the hook-off attack does read the file, so the tests below can fail."""
    result = _attack(_try_each([str(root_only_file)]), isolate=False)
    assert "TOP-SECRET-0600" in result.stdout


@needs_bwrap
def test_attack_reading_a_root_only_file(root_only_file: Path) -> None:
    result = _attack(_try_each([str(root_only_file), "/etc/shadow", "/root/.bashrc", "/proc/1/environ"]))
    assert "TOP-SECRET-0600" not in result.stdout and "READ" not in result.stdout


@needs_bwrap
def test_attack_reading_the_project_and_the_hidden_tests() -> None:
    import arena.arenas.coding_tasks as tasks

    project = Path(__file__).resolve().parents[2]
    paths = [tasks.__file__, str(project / "pyproject.toml"), str(project / "arenas" / "coding.py"), str(project)]
    code = _try_each(paths[:3]) + textwrap.dedent(
        f"""
        import os, sys
        for d in ({str(project)!r}, "/work", "/home"):
            try:
                print("LISTED", d, os.listdir(d))
            except OSError as exc:
                print("DENIED", d, type(exc).__name__)
        try:
            import arena.arenas.coding_tasks
            print("READ import")
        except ImportError:
            print("DENIED import")
        """
    )
    result = _attack(code)
    assert "READ" not in result.stdout and "LISTED" not in result.stdout, result.stdout
    assert "def sum_multiples" not in result.stdout


@needs_bwrap
def test_attack_reading_the_parents_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_TEST_SECRET", "hunter2-environ")
    code = textwrap.dedent(
        """
        import os
        print("ENV", dict(os.environ))
        for pid in [os.getppid(), 1] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
            for what in ("environ", "cmdline"):
                try:
                    with open(f"/proc/{pid}/{what}", "rb") as f:
                        print("PROC", pid, what, f.read())
                except OSError as exc:
                    print("DENIED", pid, what, type(exc).__name__)
        """
    )
    result = _attack(code)
    assert "hunter2-environ" not in result.stdout and "ARENA_TEST_SECRET" not in result.stdout
    assert "DENIED" in result.stdout  # it did try: the supervisor's environ is refused (another user)


@needs_bwrap
def test_attack_writing_outside_the_private_directory(tmp_path: Path) -> None:
    token = f"arena-escape-{os.getpid()}-{time.monotonic_ns()}"
    targets = [f"/tmp/{token}", f"/dev/shm/{token}", str(tmp_path / token), f"/var/tmp/{token}", f"/{token}"]
    code = textwrap.dedent(
        f"""
        import os
        for p in {targets!r}:
            try:
                with open(p, "w") as f:
                    f.write("escaped")
                print("WROTE", p)
            except OSError as exc:
                print("DENIED", p, type(exc).__name__)
        """
    )
    result = _attack(code)
    assert all(not Path(t).exists() for t in targets), result.stdout
    # /tmp and /dev/shm inside are private tmpfs: writable there, gone afterwards and never the host's.
    assert f"WROTE /tmp/{token}" in result.stdout and f"DENIED /{token}" in result.stdout


@needs_bwrap
def test_attack_starting_a_subprocess_and_one_that_outlives_the_run() -> None:
    token = f"arena-straggler-{time.monotonic_ns()}"
    code = textwrap.dedent(
        f"""
        import os, subprocess, sys, time
        for argv in (["/bin/sh", "-c", "id"], ["sleep", "30"]):
            try:
                subprocess.run(argv, timeout=2)
                print("RAN", argv)
            except (OSError, subprocess.SubprocessError) as exc:
                print("DENIED", argv, type(exc).__name__)
        # The interpreter itself is in the sandbox: start it, detached, to outlive the run.
        p = subprocess.Popen([sys.executable, "-I", "-S", "-c", "import time; time.sleep(30)  # {token}"],
                             start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            time.sleep(30)
            os._exit(0)
        print("STARTED", p.pid, flush=True)
        """
    )
    result = _attack(code, timeout_s=3.0)
    assert "RAN" not in result.stdout and "STARTED" in result.stdout  # no shell, no coreutils; python runs inside
    assert _nobody_processes() == []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                assert token not in (entry / "cmdline").read_text(errors="replace")


@needs_bwrap
def test_attack_connecting_to_a_listener_on_host_loopback() -> None:
    with _listener() as server:
        port = server.getsockname()[1]
        code = textwrap.dedent(
            f"""
            import socket
            for host in ("127.0.0.1", "localhost"):
                try:
                    socket.create_connection((host, {port}), timeout=1).sendall(b"hi")
                    print("CONNECTED", host)
                except OSError as exc:
                    print("DENIED", host, type(exc).__name__)
            """
        )
        result = _attack(code)
        assert "CONNECTED" not in result.stdout
        assert not _saw_connection(server)


@needs_bwrap
def test_the_worker_has_no_capabilities_and_is_nobody() -> None:
    result = _attack("print(open('/proc/self/status').read())")
    status = dict(line.split(":\t", 1) for line in result.stdout.splitlines() if ":\t" in line)
    for name in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(status[name], 16) == 0, (name, status[name])
    # Only the two the supervisor needs to make workers nobody, never to be regained (no_new_privs, nosuid).
    assert int(status["CapBnd"], 16) & ~0xC0 == 0
    assert status["NoNewPrivs"].strip() == "1" and status["Uid"].split()[:2] == ["65534", "65534"]


@needs_bwrap
def test_a_program_cannot_change_its_neighbours_results() -> None:
    """In one sandbox, a program that kills, floods the shared pipes, leaves a straggler and plants files does not
    change what the next program reports, nor does it find the next program's code or input in its memory."""
    honest = (
        "import os\nprint(sorted(os.listdir('.')), os.path.exists('/tmp/planted'), "
        "os.path.exists('/dev/shm/planted'), input())\nos.write(3, b'mine')"
    )
    attacker = textwrap.dedent(
        """
        import os, signal, time
        for pid in set(range(1, 64)) - {os.getpid()}:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for planted in ("/tmp/planted", "/dev/shm/planted"):
            try:
                open(planted, "w").write("x")
            except OSError:
                pass
        if os.fork() == 0:
            os.setsid()
            time.sleep(0.5)
            for fd in (1, 2, 3, 4):
                try:
                    os.write(fd, b"FORGED\\n")
                except OSError:
                    pass
            os._exit(0)
        import ctypes
        head, tail = b"NEIGHBOUR-", b"SECRET"  # never joined here, so only a neighbour's copy can match
        found = False
        for line in open("/proc/self/maps").read().splitlines():
            span, perms = line.split()[:2]
            if perms.startswith("r") and not line.endswith(("[vvar]", "[vsyscall]", "[vvar_vclock]")):
                lo, hi = (int(x, 16) for x in span.split("-"))
                data = ctypes.string_at(lo, hi - lo)
                at = data.find(head)
                while at >= 0 and not found:
                    found = data[at + len(head) : at + len(head) + len(tail)] == tail
                    at = data.find(head, at + 1)
        print("FOUND" if found else "NOT-FOUND")
        """
    )
    alone = run_python(honest, stdin="NEIGHBOUR-SECRET\n")
    first = run_batch(
        [(honest, "NEIGHBOUR-SECRET\n"), (HOOK_OFF + attacker, None), (honest, "NEIGHBOUR-SECRET\n")], timeout_s=3.0
    )
    second = run_batch([(HOOK_OFF + attacker, None), (honest, "NEIGHBOUR-SECRET\n")], timeout_s=3.0)
    for result in (first[0], first[2], second[1]):
        assert result.ok and (result.stdout, result.channel) == (alone.stdout, alone.channel), result
    assert "False False" in alone.stdout and "FORGED" not in second[1].stdout + second[1].stderr
    # The attacker ran after a neighbour in the same sandbox and did not find its input anywhere in its memory.
    assert "NOT-FOUND" in first[1].stdout and "NOT-FOUND" in second[0].stdout, first[1].stdout + first[1].stderr
