"""A launch handle's optional capabilities are declared protocols (issue 43 item 3):
the launched server asks ``isinstance(handle, KillsNow)``, not whether a name exists."""

from __future__ import annotations

from types import SimpleNamespace

from inferx_core.pipeline.server.lifecycle import RunningServer
from inferx_core.sdk.launcher import (
    HasEngineUrls,
    HasPid,
    HasRouterMetrics,
    KillsNow,
    NamesExitedProcess,
    ServerHandle,
)


class _Plain:
    """Only what every handle has (sdk.launcher.ServerHandle)."""

    base_url = "http://127.0.0.1:1"

    def __init__(self) -> None:
        self.stops: list[float] = []

    def alive(self) -> bool:
        return False

    def returncode(self) -> int | None:
        return 3

    def log_tail(self, lines: int = 40) -> str:
        return ""

    def stop(self, grace_s: float = 30.0) -> None:
        self.stops.append(grace_s)


class _Deployment(_Plain):
    def __init__(self) -> None:
        super().__init__()
        self.killed = False

    def kill_now(self) -> None:
        self.killed = True

    def exited_process(self) -> str | None:
        return "role decode (decode-1 on node0)"

    def engine_urls(self) -> list[str]:
        return ["http://node0:8001", "http://node1:8002"]

    def router_metrics_url(self) -> str | None:
        return None


def test_a_plain_handle_has_none_of_the_optional_capabilities() -> None:
    plain = _Plain()
    assert isinstance(plain, ServerHandle)
    for capability in (HasPid, KillsNow, NamesExitedProcess, HasEngineUrls, HasRouterMetrics):
        assert not isinstance(plain, capability)
    server = SimpleNamespace(handle=plain)
    RunningServer.kill_now(server)  # only .handle is read
    assert plain.stops == [0.0]
    assert RunningServer.who_exited(server) == "engine"


def test_a_deployment_handle_is_asked_through_its_protocols() -> None:
    handle = _Deployment()
    assert isinstance(handle, KillsNow) and isinstance(handle, NamesExitedProcess)
    assert isinstance(handle, HasEngineUrls) and isinstance(handle, HasRouterMetrics)
    server = SimpleNamespace(handle=handle)
    RunningServer.kill_now(server)
    assert handle.killed and handle.stops == []
    assert RunningServer.who_exited(server) == "role decode (decode-1 on node0)"
