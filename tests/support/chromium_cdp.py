"""Debian's chromium, headless, driven over the DevTools protocol on a pipe (chromium's
--remote-debugging-pipe: commands in on fd 3, replies and events out on fd 4, each a JSON
message ended by a NUL byte), with nothing but the standard library: no browser download,
no npm client, no network port.

    with Browser() as browser:
        page = browser.open("http://127.0.0.1:8080/")
        browser.evaluate(page, "document.title")
        browser.wait_for(page, "document.querySelector('#answer').textContent.length > 0")
        browser.screenshot(page, "page.png")
        browser.console_errors()   # exceptions, console.error calls, error log entries

chromium_path() is None where no chromium is installed (the tests then skip)."""

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time


def chromium_path():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(Exception):
    pass


class Browser:
    def __init__(self, width=1100, height=900, timeout=60):
        self.timeout = timeout
        self.events = []
        self._next_id = 0
        self._buffer = b""
        self._profile = tempfile.mkdtemp(prefix="vkf-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # Above 4, so that putting them on 3 and 4 in the child never overwrites one with the other.
        to_browser_r, from_browser_w = [self._high_fd(fd) for fd in (to_browser_r, from_browser_w)]

        def child_fds():
            os.dup2(to_browser_r, 3, inheritable=True)
            os.dup2(from_browser_w, 4, inheritable=True)

        # --no-sandbox: CI runs as root; --disable-dev-shm-usage: containers' /dev/shm is small;
        # --no-proxy-server: the pages are this machine's, whatever the environment's proxy.
        args = [chromium_path(), "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-proxy-server", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-sync", "--disable-background-networking",
                "--disable-component-update", "--mute-audio", "--user-data-dir=" + self._profile,
                "--window-size=%d,%d" % (width, height), "about:blank"]
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, close_fds=False, preexec_fn=child_fds)
        os.close(to_browser_r)
        os.close(from_browser_w)

    @staticmethod
    def _high_fd(fd):
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(fd)
        return high

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.process.poll() is None:
            try:
                self._send("Browser.close", {}, None)
                self.process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired, BrowserError):
                self.process.kill()
                self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def _send(self, method, params, session):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer within %d s" % self.timeout)
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 16)
                if not chunk:
                    raise BrowserError("chromium closed the DevTools pipe (exit status %s)" % self.process.poll())
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=None):
        """The command's result; events that arrive meanwhile go to self.events."""
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise BrowserError("%s: %s" % (method, message["error"]))
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def pump(self, seconds):
        """Collects events for `seconds`."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read_message(deadline))
        except BrowserError:
            pass

    def open(self, url):
        """A new tab showing `url` once loaded; returns its session id."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.call(domain + ".enable", {}, session)
        self.call("Page.navigate", {"url": url}, session)
        self.wait_for(session, "document.readyState === 'complete'")
        return session

    def evaluate(self, session, expression, await_promise=False):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": await_promise}, session)
        if "exceptionDetails" in result:
            raise BrowserError("%s threw: %s" % (expression, result["exceptionDetails"]))
        return result["result"].get("value")

    def wait_for(self, session, expression, timeout=None):
        """Polls `expression` until it is truthy; its value."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            value = self.evaluate(session, expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError("timed out waiting for %s" % expression)
            time.sleep(0.1)

    def screenshot(self, session, path):
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def console_errors(self):
        """What the pages said went wrong: uncaught exceptions, console.error, error log entries."""
        errors = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                errors.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                errors.append(params["entry"].get("text", ""))
        return errors
