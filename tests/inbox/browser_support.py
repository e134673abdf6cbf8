"""The real-browser parts of the inbox tests: Debian's chromium driven by Playwright, ASGI apps
on real uvicorn (127.0.0.1, port 0), and screenshots kept as test artifacts.

Playwright never downloads a browser here: it launches ``/usr/bin/chromium`` (Debian's package,
which ``scripts/test.sh`` installs) through ``executable_path``. Without chromium or Playwright
the browser tests skip with the reason, except under CI (``CI`` set), where they fail: CI must
never pass by silently skipping the browser.

Screenshots go to ``test-artifacts/browser/`` at the repository root (gitignored); a test that
fails leaves one of each open page there too.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path(os.environ.get("TOOLNEXUS_CHROMIUM", "/usr/bin/chromium"))
"""The browser binary (Debian's ``chromium``)."""

LAUNCH_ARGS = (
    "--headless",
    "--no-sandbox",  # the tests run as root in a container
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # The machine's network is closed: without these chromium keeps dialling Google's hosts.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"
"""Where screenshots are written (gitignored)."""

TIMEOUT_MS = 15_000
"""Playwright's auto-wait limit for actions and ``expect`` (a busy 2-core machine)."""


def unavailable(reason: str) -> None:
    """Skip with ``reason``; under CI fail instead."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the browser tests (scripts/test.sh installs chromium)")
    pytest.skip(reason)


def chromium_path() -> str:
    """The chromium binary to launch, after checking that it and Playwright are there."""
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        unavailable(f"{CHROMIUM} is missing (apt-get install chromium)")
    try:
        import playwright.async_api  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        unavailable("playwright is not installed (pip install -e '.[dev]')")
    return str(CHROMIUM)


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """A launched chromium (a Playwright ``Browser``), closed on exit."""
    from playwright.async_api import async_playwright

    path = chromium_path()
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=path, args=list(LAUNCH_ARGS))
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[str]:
    """Serve the ASGI ``app`` on real uvicorn at 127.0.0.1 (a free port) → its base URL."""
    from toolnexus.serve.server import start

    handle = await start(app, "127.0.0.1:0")
    try:
        yield handle.url
    finally:
        await handle.stop()


def artifact_name(name: str) -> str:
    """``name`` made safe as a file name (a test id keeps its parameters readable)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "page"


async def screenshot(page: Any, name: str) -> Path:
    """Save a full-page PNG of ``page`` as ``test-artifacts/browser/<name>.png``."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{artifact_name(name)}.png"
    await page.screenshot(path=str(path), full_page=True)
    return path
