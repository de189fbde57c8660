"""A vkf-server process for the tests that drive one (tests/serve, tests/dist): started on a
free port (`--port 0`; the port read from its "listening on" line), its stderr collected, HTTP
requests on fresh connections, /metrics parsed, and a stop on SIGTERM that fails the test on a
bad exit or on any word from the Vulkan validation layer."""

import http.client
import json
import os
import signal
import subprocess
import threading
import time

from cli_checks import fail


class ServerProcess:
    def __init__(self, cmd, env=None, headers=None, what="vkf-server"):
        """cmd: the whole command line (vkf-server's, or mpirun's running it), with --port 0.
        headers: sent with every request (an API key)."""
        self.what = what
        self.headers = headers or {}
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **(env or {})))
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        line = self.proc.stdout.readline()
        if "listening on http://" not in line:
            self.proc.wait(timeout=60)
            raise SystemExit("%s did not start: %r %s" % (what, line, "".join(self.stderr)))
        self.port = int(line.rsplit(":", 1)[1])
        self.base = "http://127.0.0.1:%d" % self.port

    def request(self, method, path, body=None, headers=None, timeout=300):
        """(status, headers, body text). A body that is not bytes or str goes as JSON."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        conn.request(method, path, body=data,
                     headers=dict({"Content-Type": "application/json"}, **self.headers, **(headers or {})))
        resp = conn.getresponse()
        text = resp.read().decode("utf-8")
        conn.close()
        return resp.status, dict(resp.getheaders()), text

    def post(self, path, body, headers=None, timeout=300):
        """(status, the JSON object answered, or the text when it is not one)."""
        status, _, text = self.request("POST", path, body, headers, timeout)
        return status, json.loads(text) if text.startswith("{") else text

    def probe_health(self, timeout=1):
        """One /health request on a fresh connection: (status or the error, seconds taken)."""
        start = time.time()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
            conn.request("GET", "/health")
            status = conn.getresponse().status
            conn.close()
        except OSError as e:
            status = "%s: %s" % (type(e).__name__, e)
        return status, time.time() - start

    def metrics(self, headers=None):
        """/metrics as {name with labels: value}."""
        _, _, text = self.request("GET", "/metrics", headers=headers)
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def stop(self, exit_ok=lambda code: code == 0):
        """SIGTERM, then its exit code judged by `exit_ok` and its stderr checked."""
        if self.proc.poll() is not None:  # stopped by a check already
            self.check_stderr()
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("%s did not stop on SIGTERM" % self.what)
            return
        if not exit_ok(code):
            fail("%s exited %d on SIGTERM: %s" % (self.what, code, "".join(self.stderr)))
        self.check_stderr()

    def check_stderr(self):
        time.sleep(0.2)  # the reader thread's last lines
        if "validation" in "".join(self.stderr).lower():
            fail("Vulkan validation spoke in %s:\n%s" % (self.what, "".join(self.stderr)))
