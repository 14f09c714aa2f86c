"""A small W3C WebDriver client (over httpx) for Lomi's window, driven through `tauri-driver`,
which starts WebKitWebDriver and the app. Only what the desktop tests use."""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

import httpx

T = TypeVar("T")

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
# Outer limits: each wait ends at what it waits for; these only end one that never would, and
# are far above what a slow, busy two-core machine needs.
WAIT_DEADLINE = 60.0
PAINT_WAIT_MS = 10_000
# WebDriver's own limit for a script (its default is 30 s): above PAINT_WAIT_MS, so a script
# that waits ends by itself first.
SCRIPT_TIMEOUT_MS = 120_000


class WebDriverError(AssertionError):
    pass


class Session:
    """One WebDriver session: one running app and its window."""

    def __init__(self, base: str, application: str, args: list[str]) -> None:
        self.http = httpx.Client(base_url=base, timeout=SCRIPT_TIMEOUT_MS / 1000 + 30)
        capabilities = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "wry",
                    "tauri:options": {"application": application, "args": args},
                }
            }
        }
        reply = self._send("POST", "/session", capabilities)
        self.id = reply["sessionId"]
        self.cmd("POST", "/timeouts", {"script": SCRIPT_TIMEOUT_MS})

    def _send(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        response = self.http.request(method, path, json=body if body is not None else ({} if method == "POST" else None))
        try:
            value = response.json().get("value")
        except ValueError:
            raise WebDriverError(f"{method} {path}: HTTP {response.status_code} {response.text[:500]}") from None
        if response.status_code >= 400:
            raise WebDriverError(f"{method} {path}: HTTP {response.status_code} {value}")
        return value

    def cmd(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._send(method, f"/session/{self.id}{path}", body)

    # ---- elements ----

    @staticmethod
    def again_if_stale(attempt: Callable[[], T], deadline: float) -> T:
        """`attempt()`, made again while WebDriver answers "stale element": the page replaced a
        node between finding it and using it (or while a find ran)."""
        end = time.monotonic() + deadline
        while True:
            try:
                return attempt()
            except WebDriverError as error:
                if "stale element" not in str(error) or time.monotonic() > end:
                    raise
            time.sleep(0.05)

    def find_all(self, css: str, deadline: float = 5.0) -> list[str]:
        """The elements matching `css`."""
        found = self.again_if_stale(
            lambda: self.cmd("POST", "/elements", {"using": "css selector", "value": css}), deadline
        )
        ids = []
        for reference in found:
            if ELEMENT not in reference:
                raise WebDriverError(f"not a W3C element reference: {reference}")
            ids.append(reference[ELEMENT])
        return ids

    def displayed(self, element: str) -> bool:
        """Whether an element is shown; one the page replaced meanwhile (stale) is not."""
        try:
            return bool(self.cmd("GET", f"/element/{element}/displayed"))
        except WebDriverError as error:
            if "stale element" in str(error):
                return False
            raise

    def wait_for(self, css: str, deadline: float = WAIT_DEADLINE) -> str:
        """Waits (polling, bounded) until an element matching `css` is displayed."""
        end = time.monotonic() + deadline
        while True:
            for element in self.find_all(css):
                if self.displayed(element):
                    return element
            if time.monotonic() > end:
                raise WebDriverError(f"no visible {css!r} in {deadline}s; page:\n{self.page_text()}")
            time.sleep(0.1)

    def wait_gone(self, css: str, deadline: float = WAIT_DEADLINE) -> None:
        end = time.monotonic() + deadline
        while any(self.displayed(e) for e in self.find_all(css)):
            if time.monotonic() > end:
                raise WebDriverError(f"{css!r} still shown after {deadline}s; page:\n{self.page_text()}")
            time.sleep(0.1)

    def on_fresh(self, css: str, use: Callable[[str], T], deadline: float = WAIT_DEADLINE) -> T:
        """`use` on the visible element matching `css`, found again if the page re-rendered it
        in between (a stale reference)."""
        return self.again_if_stale(lambda: use(self.wait_for(css, deadline)), deadline)

    def click_on(self, css: str, deadline: float = WAIT_DEADLINE) -> None:
        """Clicks the visible element matching `css`."""
        self.on_fresh(css, self.click, deadline)

    def text_of(self, css: str, deadline: float = WAIT_DEADLINE) -> str:
        """The text of the visible element matching `css`."""
        return self.on_fresh(css, self.text, deadline)

    def selected_of(self, css: str, deadline: float = WAIT_DEADLINE) -> bool:
        """Whether the visible element matching `css` is checked."""
        return self.on_fresh(css, self.selected, deadline)

    def text(self, element: str) -> str:
        return self.cmd("GET", f"/element/{element}/text")

    def click(self, element: str) -> None:
        self.cmd("POST", f"/element/{element}/click")

    def type(self, element: str, text: str) -> None:
        self.cmd("POST", f"/element/{element}/value", {"text": text})

    def keys(self, text: str) -> None:
        """Types into whatever has focus, key by key (WebDriver actions), as a person would."""
        steps = []
        for key in text:
            steps += [{"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}]
        self.cmd("POST", "/actions", {"actions": [{"type": "key", "id": "keyboard", "actions": steps}]})
        self.cmd("DELETE", "/actions")

    def selected(self, element: str) -> bool:
        return bool(self.cmd("GET", f"/element/{element}/selected"))

    def script(self, source: str, *args: Any) -> Any:
        return self.cmd("POST", "/execute/sync", {"script": source, "args": list(args)})

    def page_text(self) -> str:
        try:
            return str(self.script("return document.body.innerText"))[:4000]
        except WebDriverError as error:
            return f"(page unreadable: {error})"

    def painted(self) -> bool:
        """Returns once the page has rendered twice since the call: a screenshot taken at once
        after a DOM change can show an older frame when the machine is busy. WebKit may hold
        animation frames back (a window it considers hidden, a busy machine); after
        PAINT_WAIT_MS without them this returns False, and the screenshot shows what the window
        holds, rather than failing on WebDriver's script timeout."""
        return bool(self.cmd("POST", "/execute/async", {
            "script": "const done = arguments[arguments.length - 1];"
                      " const late = setTimeout(() => done(false), arguments[0]);"
                      " requestAnimationFrame(() => requestAnimationFrame(() => { clearTimeout(late); done(true); }));",
            "args": [PAINT_WAIT_MS],
        }))

    def screenshot(self, path: Path) -> bytes:
        self.painted()
        png = base64.b64decode(self.cmd("GET", "/screenshot"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png)
        return png

    def end(self) -> None:
        try:
            self._send("DELETE", f"/session/{self.id}")
        except (WebDriverError, httpx.HTTPError):
            pass
        self.http.close()
