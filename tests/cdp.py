"""Headless Chromium driven over the DevTools protocol on a pipe (stdlib only).

``--remote-debugging-pipe`` makes Chromium read protocol commands from file
descriptor 3 and write replies and events to descriptor 4, each message a JSON
text ended by a NUL byte. No port is opened, so nothing else on the machine
can talk to the browser, and no websocket library is needed.

Used by tests/render/test_webmap.py (``make test-browser``); the flags are the ones a
headless Chromium needs as root on a machine with no network.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import tempfile
import time
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    """$DPDBSCAN_CHROMIUM, else the first Chromium on PATH."""
    env = os.environ.get("DPDBSCAN_CHROMIUM")
    if env:
        return env if Path(env).is_file() else None
    for name in NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


class ProtocolError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page (tab) attached in flat mode."""

    def __init__(
        self,
        executable: str,
        width: int = 1000,
        height: int = 750,
        timeout: float = 30.0,
        startup_timeout: float = 120.0,
        starts: int = 2,
    ):
        """``timeout`` bounds each command; the first, which waits for the
        browser to come up, gets ``startup_timeout``, and a browser that does
        not answer by then is killed and started afresh, ``starts`` times in
        all (on a loaded shared machine a start has taken over 30 s)."""
        self.timeout = timeout
        self.width, self.height = width, height
        for attempt in range(starts):
            self._spawn(executable)
            try:
                self._attach(startup_timeout)
                return
            except TimeoutError as exc:
                tail = self.log_tail()
                self.close()
                if attempt + 1 == starts:
                    raise TimeoutError(
                        f"Chromium did not answer within {startup_timeout:.0f} s, {starts} starts; "
                        f"its log ends: {tail}"
                    ) from exc
            except Exception:
                self.close()
                raise

    def _spawn(self, executable: str) -> None:
        width, height = self.width, self.height
        self.profile = tempfile.mkdtemp(prefix="dpdbscan-chromium-")
        self.log_path = Path(self.profile) / "chromium.log"
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()
        log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT, 0o600)
        null = os.open(os.devnull, os.O_RDONLY)
        args = [
            executable,
            *FLAGS,
            f"--user-data-dir={self.profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        # posix_spawn, not fork: the dup2s below put the pipe ends exactly on
        # 3 and 4, and every other descriptor of ours is close-on-exec.
        actions = [
            (os.POSIX_SPAWN_DUP2, null, 0),
            (os.POSIX_SPAWN_DUP2, log, 1),
            (os.POSIX_SPAWN_DUP2, log, 2),
            (os.POSIX_SPAWN_DUP2, to_r, 3),
            (os.POSIX_SPAWN_DUP2, from_w, 4),
        ]
        try:
            self.pid = os.posix_spawn(executable, args, dict(os.environ), file_actions=actions)
        finally:
            for fd in (to_r, from_w, log, null):
                os.close(fd)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict] = []
        self.session: str | None = None

    def _attach(self, startup_timeout: float) -> None:
        target = self.call(
            "Target.createTarget", {"url": "about:blank"}, session=False, timeout=startup_timeout
        )
        self.session = self.call(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, session=False
        )["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )

    # ----------------------------------------------------------- protocol
    def _send(self, method: str, params: dict | None, session) -> int:
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not False and self.session is not None:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._to_w, data) :]
        return self._next_id

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_r], [], [], left)[0]:
                raise TimeoutError("no answer from Chromium in time")
            chunk = os.read(self._from_r, 1 << 20)
            if not chunk:
                raise ProtocolError("Chromium closed the pipe: " + self.log_tail())
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(
        self, method: str, params: dict | None = None, *, session=None, timeout: float | None = None
    ) -> dict:
        """Send a command and return its result; events seen meanwhile are kept."""
        mid = self._send(method, params, session)
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            msg = self._read_message(deadline)
            if msg.get("id") == mid:
                if "error" in msg:
                    raise ProtocolError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        for ev in self.events:
            if ev["method"] == method:
                return ev
        while True:
            msg = self._read_message(deadline)
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg

    # ----------------------------------------------------------- page use
    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str):
        res = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}
        )
        if "exceptionDetails" in res:
            raise ProtocolError(f"evaluating {expression!r}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 10.0):
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression!r} stayed false")
            time.sleep(0.05)

    def mouse(self, kind: str, x: float, y: float, **extra) -> None:
        self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra})

    def screenshot(self, path) -> bytes:
        data = base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])
        Path(path).write_bytes(data)
        return data

    def console_errors(self) -> list[str]:
        """Errors the page reported: console.error/assert, uncaught
        exceptions, and browser log entries of level error."""
        out = []
        for ev in self.events:
            p = ev.get("params", {})
            if ev["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(
                    "console: "
                    + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", []))
                )
            elif ev["method"] == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: " + str(d.get("exception", {}).get("description", d.get("text"))))
            elif ev["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append("log: " + str(p["entry"].get("text")))
        return out

    def requested_urls(self) -> list[str]:
        return [
            ev["params"]["request"]["url"]
            for ev in self.events
            if ev["method"] == "Network.requestWillBeSent"
        ]

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    # ------------------------------------------------------------ closing
    def close(self) -> None:
        try:
            self._send("Browser.close", None, False)
        except OSError:
            pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if os.waitpid(self.pid, os.WNOHANG)[0]:
                break
            time.sleep(0.05)
        else:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        for fd in (self._to_w, self._from_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
