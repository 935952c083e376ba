"""Headless Chromium as the customer: Debian's `chromium` driven through `chromium-driver` by
Selenium (scripts/bootstrap test installs all three). One browser per test module (`start_browser`);
each test opens its own tabs.

Without Chromium the browser tests skip, except under CI (`CI` set), where a missing browser is a
failure rather than a silent pass.

What a real desktop would add, and how the tests stand in for it:
- A browser following a redirect to an app's URL scheme (`myshop://…`) asks the desktop to open
  it (`xdg-open`); headless Chromium launches no external handler, so `Browser.sent_to`
  reads the URL Chromium was sent to from its network log and the test runs the real `xdg-open`
  with it.
- `opener: "daemon"`: stpd runs STPD_URL_OPENER (`xdg-open`), which runs `$BROWSER`; the wrapper
  `Browser.opener_script` writes opens a tab in this browser through its DevTools endpoint.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

PAGE_TIMEOUT = 30.0
# Debian's /usr/bin/chromium is a shell wrapper; the binary itself starts faster and quieter.
CHROMIUM_PATHS = ["/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome"]


def _find(names: list[str]) -> str | None:
    for name in names:
        path = name if os.path.isabs(name) else shutil.which(name)
        if path and os.access(path, os.X_OK):
            return path
    return None


def require_browser() -> tuple[str, str]:
    """Chromium's and chromedriver's paths; skips (fails under CI) when either is missing."""
    browser = _find(CHROMIUM_PATHS)
    driver = _find(["chromedriver"])
    missing = [name for name, path in (("chromium", browser), ("chromium-driver", driver)) if not path]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (requirements-test.txt)")
    if missing:
        message = f"{', '.join(missing)} missing: scripts/bootstrap test installs them"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return browser, driver


class Browser:
    def __init__(self, directory: Path):
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service

        binary, driver = require_browser()
        options = Options()
        options.binary_location = binary
        for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                         "--disable-background-networking", "--disable-component-update",
                         f"--user-data-dir={directory / 'profile'}", "--window-size=800,600"]:
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
        self.directory = directory
        self.driver = webdriver.Chrome(service=Service(driver, log_output=str(directory / "chromedriver.log")),
                                       options=options)
        self.driver.set_page_load_timeout(PAGE_TIMEOUT)
        self.devtools = self.driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
        self.home = self.driver.current_window_handle

    def close(self) -> None:
        self.driver.quit()

    # -- tabs --------------------------------------------------------------------------------

    def open(self, url: str) -> str:
        """Opens URL in a new tab, as a customer's click on the app's link would; returns the tab."""
        self.driver.switch_to.new_window("tab")
        self.driver.get(url)
        return self.driver.current_window_handle

    def wait_new_tab(self, before: set[str], timeout: float = PAGE_TIMEOUT) -> str:
        """The tab someone else opened (stpd's opener) since BEFORE, switched to once it loaded."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            new = set(self.driver.window_handles) - before
            if new:
                handle = new.pop()
                self.driver.switch_to.window(handle)
                self.wait(lambda: self.driver.execute_script("return document.readyState") == "complete"
                          and self.driver.current_url not in ("about:blank", ""))
                return handle
            time.sleep(0.1)
        raise AssertionError(f"no tab opened within {timeout} s")

    def close_tab(self) -> None:
        """The customer closes the page."""
        self.driver.close()
        self.driver.switch_to.window(self.home)

    @property
    def tabs(self) -> list[str]:
        return list(self.driver.window_handles)

    # -- the page ----------------------------------------------------------------------------

    def press(self, element_id: str) -> None:
        """Clicks the button a person would press."""
        self.driver.find_element("id", element_id).click()

    def text(self) -> str:
        return self.driver.find_element("tag name", "body").text

    @property
    def url(self) -> str:
        return self.driver.current_url

    def wait(self, condition, timeout: float = PAGE_TIMEOUT, what: str = "the page") -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if condition():
                    return
            except Exception:  # the page is mid-navigation
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {timeout} s for {what}; at {self.driver.current_url}: "
                                     f"{self._text_or_none()!r}")
            time.sleep(0.05)

    def wait_text(self, needle: str, timeout: float = PAGE_TIMEOUT) -> str:
        self.wait(lambda: needle in self.text(), timeout, what=repr(needle))
        return self.text()

    def _text_or_none(self) -> str | None:
        try:
            return self.text()[:500]
        except Exception:
            return None

    # -- what a desktop would do ---------------------------------------------------------------

    def sent_to(self, prefix: str, timeout: float = PAGE_TIMEOUT) -> str:
        """The URL starting with PREFIX (an app's return URL) that a page sent this browser to (the
        bank's 302 back to the app), read from Chromium's network log: the URL a desktop browser
        hands to xdg-open."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for entry in self.driver.get_log("performance"):
                message = json.loads(entry["message"])["message"]
                if message.get("method") != "Network.requestWillBeSent":
                    continue
                url = message["params"].get("documentURL") or message["params"]["request"]["url"]
                if url.startswith(prefix):
                    return url
            time.sleep(0.1)
        raise AssertionError(f"the browser was not sent to {prefix}… within {timeout} s")

    def opener_script(self, directory: Path) -> Path:
        """A `$BROWSER` for xdg-open: opens its URL in a new tab of this browser (DevTools'
        /json/new), as a desktop browser opens a link another program hands it."""
        script = directory / "open-in-test-browser"
        script.write_text(
            "#!/usr/bin/env python3\n"
            "import sys, urllib.request\n"
            f"request = urllib.request.Request('http://{self.devtools}/json/new?' + sys.argv[1], method='PUT')\n"
            "urllib.request.urlopen(request, timeout=30).read()\n")
        script.chmod(0o755)
        return script


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """One headless Chromium for the module, quit at its end."""
    require_browser()
    instance = Browser(tmp_path_factory.mktemp("chromium"))
    try:
        yield instance
    finally:
        instance.close()
