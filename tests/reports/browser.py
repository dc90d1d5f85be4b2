"""A real headless Chromium driven over the DevTools protocol on a pipe (fd 3 and 4, no
port), so a test sees a page the way a person's browser does: console errors, uncaught
exceptions, failed loads, every request made, the DOM after scripts, a screenshot."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TIMEOUT_S = 30.0


class BrowserError(Exception):
    pass


@dataclass
class LoadedPage:
    errors: list[str] = field(default_factory=list)
    """Console errors, uncaught exceptions and failed loads, as Chromium logged them."""
    requests: list[str] = field(default_factory=list)


class Browser:
    """One headless Chromium for a test module; `load` opens a page in a fresh tab."""

    def __init__(self) -> None:
        self._profile = tempfile.mkdtemp(prefix="starquake-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire_fds() -> None:  # Chromium reads commands on fd 3, answers on fd 4
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self._process = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--disable-background-networking",
             "--remote-debugging-pipe", f"--user-data-dir={self._profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=wire_fds, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict] = []
        self.session: str | None = None

    def close(self) -> None:
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
        shutil.rmtree(self._profile, ignore_errors=True)

    def load(self, path: Path, width: int = 1200, height: int = 900) -> LoadedPage:
        """Open `path` in a new tab, wait for its load event, and collect what went wrong."""
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        self._events.clear()
        self.call("Page.navigate", {"url": path.resolve().as_uri()})
        self._wait_event("Page.loadEventFired")
        page = LoadedPage()
        for event in self._events:
            params = event.get("params", {})
            method = event.get("method")
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                page.errors.append("console: " + " ".join(
                    str(a.get("value", a.get("description"))) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                page.errors.append("exception: " + json.dumps(params.get("exceptionDetails")))
            elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
                page.errors.append("log: " + params["entry"].get("text", ""))
            elif method == "Network.loadingFailed":
                page.errors.append("load failed: " + params.get("errorText", ""))
            elif method == "Network.requestWillBeSent":
                page.requests.append(params["request"]["url"])
        return page

    def evaluate(self, expression: str) -> Any:
        answer = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in answer:
            raise BrowserError(f"{expression}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        shot = self.call("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def call(self, method: str, params: dict | None = None, *, session: bool = True) -> dict:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self._events.append(answer)

    def _wait_event(self, method: str) -> None:
        if any(e.get("method") == method for e in self._events):
            return
        while True:
            event = self._read()
            self._events.append(event)
            if event.get("method") == method:
                return

    def _read(self) -> dict:
        deadline = time.monotonic() + TIMEOUT_S
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError(f"Chromium did not answer within {TIMEOUT_S:.0f} s")
            ready, _, _ = select.select([self._from_chrome], [], [], 1.0)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise BrowserError("Chromium closed the DevTools pipe")
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)
