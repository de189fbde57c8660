#!/usr/bin/env python3
"""vkf-server's page at / in a real browser: Debian's chromium, headless, driven over the
DevTools protocol (tests/support/chromium_cdp.py) against running servers of models/kjv-bloom.

- a chat server (kjv-bloom given a ChatML template): the page shows the model and the device,
  a prompt typed into it (key events) streams an answer in more than one piece that equals the
  API's greedy answer to the same request, the token/s readout shows, its requests go to
  relative URLs with Content-Type application/json, and Stop ends a long answer, the server
  answering again afterwards;
- a server with --api-key and no chat format: / opens without a key (the rest of the API
  still needs one), the page asks for the key first, and with it typed in continues a prompt
  exactly as /v1/completions does.
Neither page may put a message in the console. Screenshots of both stay in ARTIFACT_DIR.

Exit 77 (skipped) without chromium (scripts/deps.sh installs Debian's).

usage: page_test.py PATH/TO/vkf-server KJV_MODEL_DIR ARTIFACT_DIR
"""

import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "apps"))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from chromium_cdp import Browser, chromium_path  # noqa: E402
from cli_checks import command, fail, finish  # noqa: E402
from server_process import ServerProcess  # noqa: E402

SERVER, KJV, ARTIFACTS = sys.argv[1:4]
CHATML_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                   "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                   "{% endif %}")
MAX_TOKENS = 24
LAST_ANSWER = "[...document.querySelectorAll('.message.assistant')].pop()"


class Server(ServerProcess):
    """vkf-server with `args` on a free port."""

    def __init__(self, args):
        super().__init__(command(SERVER, args + ["--port", "0"]))


def type_into(browser, tab, element, text, enter=True):
    """Focuses `element` and types `text` as key input, then presses Enter."""
    browser.evaluate(tab, "document.getElementById(%s).focus()" % json.dumps(element))
    browser.call("Input.insertText", {"text": text}, tab)
    if enter:
        for kind in ("keyDown", "keyUp"):
            browser.call("Input.dispatchKeyEvent", {"type": kind, "key": "Enter", "code": "Enter",
                                                    "windowsVirtualKeyCode": 13, "text": "\r"}, tab)


def set_field(browser, tab, field, value):
    browser.evaluate(tab, "document.getElementById(%s).value = %s" % (json.dumps(field), json.dumps(str(value))))


def ask_page(browser, tab, prompt):
    """Types `prompt` into the page and waits for the whole answer: (text, pieces, rate line)."""
    type_into(browser, tab, "prompt", prompt)
    browser.wait_for(tab, "%s && %s.dataset.state !== 'streaming'" % (LAST_ANSWER, LAST_ANSWER), timeout=240)
    state, text, chunks = browser.evaluate(
        tab, "(a => [a.dataset.state, a.querySelector('.text').textContent, Number(a.dataset.chunks || 0)])(%s)"
        % LAST_ANSWER)
    if state != "done":
        fail("the page's answer to %r ended %s: %s" % (prompt, state, text))
    return text, chunks, browser.evaluate(tab, "document.getElementById('rate').textContent")


def api_requests(browser):
    """(url, method, Content-Type) of the page's requests to the API."""
    seen = []
    for e in browser.events:
        if e.get("method") == "Network.requestWillBeSent":
            request = e["params"]["request"]
            if "/v1/" in request["url"]:
                headers = {k.lower(): v for k, v in request.get("headers", {}).items()}
                seen.append((request["url"], request["method"], headers.get("content-type")))
    return seen


def check_chat_page(browser, server):
    tab = browser.open(server.base + "/")
    browser.call("Network.enable", {}, tab)
    shown = browser.evaluate(tab, "['model', 'device', 'mode'].map(id => document.getElementById(id).textContent)"
                                  ".concat([document.getElementById('key-form').hidden])")
    if shown[0] != "chat-kjv" or not shown[1] or shown[2] != "chat" or shown[3] is not True:
        fail("the chat page shows model, device, mode, key form hidden = %s" % shown)
    set_field(browser, tab, "temperature", 0)
    set_field(browser, tab, "max_tokens", MAX_TOKENS)
    prompt = "Who made the heaven and the earth?"
    text, chunks, rate = ask_page(browser, tab, prompt)
    status, _, body = server.request("POST", "/v1/chat/completions", {
        "model": "chat-kjv", "messages": [{"role": "user", "content": prompt}], "temperature": 0, "top_p": 1,
        "max_tokens": MAX_TOKENS})
    expected = json.loads(body)["choices"][0]["message"]["content"] if status == 200 else None
    if text != expected:
        fail("the page's chat answer %r, the API's greedy answer %r (status %d)" % (text, expected, status))
    if chunks < 2:
        fail("the answer came in %d piece(s): not streamed" % chunks)
    if not re.match(r"^\d+ tokens, [\d.]+ tok/s, first token after \d+ ms$", rate):
        fail("the token/s readout says %r" % rate)
    requests = api_requests(browser)
    if not requests or any(r != (server.base + "/v1/chat/completions", "POST", "application/json")
                           for r in requests):
        fail("the page's requests: %s" % requests)
    browser.screenshot(tab, os.path.join(ARTIFACTS, "server-page-chat.png"))
    # Stop: a long answer ended by the button; the conversation goes on afterwards.
    set_field(browser, tab, "max_tokens", 300)
    type_into(browser, tab, "prompt", "Tell me everything about the kings of Israel.")
    browser.wait_for(tab, "(a => Number(a.dataset.chunks || 0) >= 2 || a.dataset.state !== 'streaming')(%s)"
                     % LAST_ANSWER, timeout=240)
    browser.evaluate(tab, "document.getElementById('stop').click()")
    state = browser.wait_for(tab, "%s.dataset.state !== 'streaming' && %s.dataset.state" % (LAST_ANSWER,
                                                                                             LAST_ANSWER))
    if state != "stopped":
        fail("after Stop the answer is %s: %s" % (state, browser.evaluate(tab, LAST_ANSWER + ".textContent")))
    status, _, _ = server.request("GET", "/health")
    if status != 200:
        fail("/health after Stop: %d" % status)


def check_key_page(browser, server):
    status, headers, page = server.request("GET", "/")
    content_type = headers.get("Content-Type", "")
    if status != 200 or not content_type.startswith("text/html") or "vkf-info" not in page:
        fail("GET / with --api-key and no key: %d %s" % (status, content_type))
    status, _, _ = server.request("GET", "/v1/models")
    if status != 401:
        fail("GET /v1/models without the key: %d, expected 401" % status)
    tab = browser.open(server.base + "/")
    asked = browser.evaluate(tab, "['key-form', 'chat', 'mode'].map(id => document.getElementById(id))"
                                  ".map((e, i) => i == 0 ? !e.hidden : i == 1 ? e.hidden : e.textContent)")
    if asked[:2] != [True, True] or not asked[2].startswith("completion"):
        fail("with --api-key the page shows key form, hides chat, mode = %s" % asked)
    browser.screenshot(tab, os.path.join(ARTIFACTS, "server-page-api-key.png"))
    type_into(browser, tab, "key", "sesame")
    browser.wait_for(tab, "document.getElementById('key-form').hidden && !document.getElementById('chat').hidden")
    set_field(browser, tab, "temperature", 0)
    set_field(browser, tab, "max_tokens", MAX_TOKENS)
    prompt = "In the beginning God"
    text, chunks, _ = ask_page(browser, tab, prompt)
    status, _, body = server.request("POST", "/v1/completions", {
        "model": "kjv-bloom", "prompt": prompt, "temperature": 0, "top_p": 1, "max_tokens": MAX_TOKENS},
        {"Authorization": "Bearer sesame"})
    expected = json.loads(body)["choices"][0]["text"] if status == 200 else None
    if text != expected or chunks < 2:
        fail("the page's completion %r in %d pieces, the API's %r" % (text, chunks, expected))


def main():
    if chromium_path() is None:
        print("skipped: no chromium (scripts/deps.sh installs Debian's)")
        sys.exit(77)
    os.makedirs(ARTIFACTS, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        chat_model = os.path.join(tmp, "chat-kjv")
        os.makedirs(chat_model)
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            os.symlink(os.path.join(os.path.abspath(KJV), name), os.path.join(chat_model, name))
        with open(os.path.join(chat_model, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump({"chat_template": CHATML_TEMPLATE, "eos_token": "<|endoftext|>"}, f)
        with Browser(width=1000, height=800) as browser:
            server = Server(["--model", chat_model, "--ctx", "512", "--quiet"])
            try:
                check_chat_page(browser, server)
            finally:
                server.stop()
            keyed = Server(["--model", KJV, "--api-key", "sesame", "--ctx", "512", "--quiet"])
            try:
                check_key_page(browser, keyed)
            finally:
                keyed.stop()
            browser.pump(0.3)
            errors = browser.console_errors()
        if errors:
            fail("the page's console: %s" % errors)
    return finish("vkf-server's page: OK")


if __name__ == "__main__":
    sys.exit(main())
