"""Drive a real headless Chromium over the DevTools protocol (CDP): open a page, press
keys, type, read the DOM. Used by the dashboard tests and benchmarks/dashboard_load.py.

Chromium is started with ``--remote-debugging-port=0`` on a fresh profile; the
port it chose is read from ``DevToolsActivePort`` in that profile. The
WebSocket is aiohttp's client (a dev dependency). Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import time
from pathlib import Path
from typing import Any

HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


class Browser:
    """``async with Browser(chromium, profile) as page:`` a page target to drive."""

    def __init__(self, chromium: str, profile: Path, size: tuple[int, int] = (1400, 1000)):
        self.argv = [chromium, *HEADLESS_FLAGS, f"--user-data-dir={profile}",
                     "--remote-debugging-port=0", f"--window-size={size[0]},{size[1]}",
                     "about:blank"]  # fmt: skip
        self.profile = profile
        self.proc: subprocess.Popen | None = None
        self._ids = itertools.count(1)

    async def __aenter__(self) -> Browser:
        import aiohttp

        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        port = await self._port()
        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{port}/json/list") as resp:
            targets = await resp.json(content_type=None)
        page = next(t for t in targets if t["type"] == "page")
        self.ws = await self.session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        await self.send("Page.enable")
        await self.send("Runtime.enable")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ws.close()
        await self.session.close()
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    async def _port(self, timeout: float = 30) -> int:
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker.is_file() and marker.read_text().strip():
                return int(marker.read_text().splitlines()[0])
            assert self.proc is not None and self.proc.poll() is None, "chromium exited"
            await asyncio.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port")

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        msg_id = next(self._ids)
        await self.ws.send_str(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        while True:
            reply = json.loads((await self.ws.receive()).data)
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    async def evaluate(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def open(self, url: str, ready: str, timeout: float = 120) -> float:
        """Navigate and wait until ``ready`` (JS) is true; seconds from navigation to ready."""
        start = time.perf_counter()
        await self.send("Page.navigate", {"url": url})
        await self.wait_for(ready, timeout)
        return time.perf_counter() - start

    async def wait_for(self, expression: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not await self.evaluate(f"Boolean({expression})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"not true after {timeout} s: {expression}")
            await asyncio.sleep(0.05)

    async def press(self, key: str, code: str, key_code: int) -> None:
        """A key press (down and up) on the focused element, as a keyboard sends it."""
        for kind in ("rawKeyDown", "keyUp"):
            event = {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": key_code}
            await self.send("Input.dispatchKeyEvent", event)

    async def type(self, text: str) -> None:
        """Type ``text`` into the focused element, one key at a time."""
        for char in text:
            await self.send(
                "Input.dispatchKeyEvent",
                {"type": "keyDown", "text": char, "key": char, "unmodifiedText": char},
            )
            await self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": char})
