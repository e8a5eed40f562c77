"""The coding arena refuses to run model code without OS isolation unless the user opts in (issue 25, item 3)."""

from __future__ import annotations

import pytest

from arena.arenas import coding
from arena.arenas.sandbox import LaunchMode

UNCONTAINED = LaunchMode(prefix=("unshare", "--net"), isolation="netns", privileges="root")


@pytest.fixture
def no_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coding, "launch_mode", lambda launcher=None: UNCONTAINED)
    monkeypatch.delenv(coding.UNSAFE_ENV, raising=False)


def test_refuses_without_isolation_in_one_line(no_bubblewrap: None) -> None:
    with pytest.raises(coding.SandboxUnavailableError) as exc:
        coding.CodingEnv()
    message = str(exc.value)
    assert "\n" not in message and "got 'netns'" in message
    assert "apt-get install -y bubblewrap" in message and "unsafe_sandbox=true" in message


def test_opt_in_by_argument_or_environment(no_bubblewrap: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "NO filesystem" in coding.CodingEnv(unsafe_sandbox=True).sandbox
    monkeypatch.setenv(coding.UNSAFE_ENV, "0")  # "0" is not an opt-in
    with pytest.raises(coding.SandboxUnavailableError):
        coding.CodingEnv()
    monkeypatch.setenv(coding.UNSAFE_ENV, "1")
    assert coding.CodingEnv().sandbox == coding.describe_isolation(UNCONTAINED)


def test_this_machine_is_contained() -> None:
    """CI runs as root on Debian, where `make test` installs bubblewrap: the real launch mode must hold."""
    mode = coding.launch_mode()
    if mode.isolation != "bwrap":
        pytest.skip(f"no bubblewrap here ({mode.isolation}); CI's machine has it")
    assert mode.contained
    assert coding.CodingEnv().sandbox.startswith("sandbox: bubblewrap")
