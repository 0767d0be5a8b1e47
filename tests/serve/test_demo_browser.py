"""The /demo page in headless Chromium (Playwright, Debian's chromium) against a real uvicorn serving the
embedded default: both panels end with the final value, "drop connection" mid-stream resumes from the last
seq (a replay, no snapshot) to the same value. Screenshots go to test-artifacts/ (ignored by git).

Skipped with a message where Playwright or Chromium is missing (scripts/test.sh installs both); under
CI=true that is a failure instead.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from turnkit.serve import create_app
from turnkit.serve._embedded import EMBEDDED_FORMAT, embedded_replay, embedded_template
from turnkit.serve._gateway import Gateway
from turnkit.serve.backends.replay import ReplayBackend

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
# (Playwright adds --headless and a fresh --user-data-dir itself)
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> tuple[Any, str]:
    reason = None
    executable = os.environ.get("TURNKIT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "playwright is not installed (pip install -e '.[test]')"
    else:
        if executable is None:
            reason = "no chromium executable (apt-get install chromium, or set TURNKIT_CHROMIUM)"
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and the browser test cannot run: {reason}")
        pytest.skip(reason)
    assert executable is not None
    return sync_playwright, executable


# The page starts its streams on load and Playwright's round trips can take seconds on a loaded machine, so
# the mid-stream moments are caught by the page itself (a 5 ms poll installed before the page's script runs),
# and the recorded replies are slowed (6 s instead of 3 s per stream) for the page's own timers.
WATCH = """
window.__midStream = null;
const watch = setInterval(() => {
  const d = window.turnkitDemo;
  if (!d?.v1 || !d?.v2) return;
  if (window.__midStream === null && d.v2.seq > 60 && !d.v2.done
      && document.querySelectorAll('#v1 .partial').length > 0
      && document.querySelectorAll('#v2 .partial').length > 0) window.__midStream = d.v2.seq;
  if (window.__dropAt !== undefined && !window.__dropped && d.v1.seq > window.__dropAt
      && d.v2.seq > window.__dropAt && !d.v1.done && !d.v2.done) {
    window.__dropped = true;
    document.getElementById('drop').click();
  }
}, 5);
"""


def _slow_gateway() -> Gateway:
    replay = embedded_replay()
    slowed = [replace(record, delay=2 * record.delay) if record.delay else record for record in replay.records]
    return Gateway(embedded_template(), EMBEDDED_FORMAT, ReplayBackend(slowed), served_model_name="turnkit-replay")


def _expected() -> dict[str, Any]:
    """The final value of the demo's replay record (the JSON after the reasoning)."""
    for line in files("turnkit.serve").joinpath("data", "default-replay.jsonl").read_text("utf-8").splitlines():
        record = json.loads(line)
        if record.get("match") == "Summarize this place review":
            value: dict[str, Any] = json.loads(record["output"].split("</think>", 1)[1])
            return value
    raise AssertionError("the demo's replay record is missing")


def _panel(page: Any, view: str) -> dict[str, Any]:
    summary = page.locator(f"#{view} [data-field=summary] li")
    if view == "v2":
        items: list[Any] = [
            {"emoji": li.locator(".emoji").inner_text(), "text": li.locator(".text").inner_text()}
            for li in summary.all()
        ]
    else:
        items = [li.inner_text() for li in summary.all()]
    return {
        "summary": items,
        "sentiment": page.locator(f"#{view} [data-field=sentiment]").inner_text(),
        "key_points": [li.inner_text() for li in page.locator(f"#{view} [data-field=key_points] li").all()],
    }


def _check_final(page: Any, expected: dict[str, Any]) -> None:
    v1, v2 = _panel(page, "v1"), _panel(page, "v2")
    assert v2 == {
        "summary": expected["summaryV2"],
        "sentiment": expected["sentiment"],
        "key_points": expected["key_points"],
    }
    assert v1 == {
        "summary": [item["text"] for item in expected["summaryV2"]],
        "sentiment": expected["sentiment"],
        "key_points": expected["key_points"],
    }
    assert page.locator("main .partial").count() == 0
    state = page.evaluate("window.turnkitDemo")
    for view in ("v1", "v2"):
        assert "error" not in state[view]["end"], state[view]["end"]
    assert state["v2"]["end"]["value"] == expected


def test_demo_in_chromium(live: Any) -> None:
    sync_playwright, executable = _chromium()
    expected = _expected()
    ARTIFACTS.mkdir(exist_ok=True)
    with live(create_app(_slow_gateway())) as server, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 820})
            page.add_init_script(WATCH)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            # 1. uninterrupted: something is visibly being written, then both panels end with the final value
            page.goto(server.url + "/demo")
            page.wait_for_function("() => window.__midStream !== null || window.turnkitDemo?.v2?.done")
            if not page.evaluate("window.turnkitDemo.v2.done"):
                page.screenshot(path=str(ARTIFACTS / "demo-streaming.png"))
            page.wait_for_function("() => window.turnkitDemo.v1.done && window.turnkitDemo.v2.done", timeout=60_000)
            assert page.evaluate("window.__midStream") is not None, "no moment with partial values in both panels"
            _check_final(page, expected)
            page.screenshot(path=str(ARTIFACTS / "demo-final.png"))

            # 2. drop the connection mid-stream (the page clicks "drop" once both are past seq 25): both resume
            # from their last seq and end with the same value
            page.evaluate("window.__dropAt = 25")
            page.click("#start")
            page.wait_for_function(
                "() => window.__dropped && window.turnkitDemo.v1.done && window.turnkitDemo.v2.done", timeout=60_000
            )
            _check_final(page, expected)
            state = page.evaluate("window.turnkitDemo")
            for view in ("v1", "v2"):
                log = state[view]["log"]
                assert state[view]["drops"] == 1
                assert any(line.startswith("reconnecting with lastEventId=") for line in log), log
                assert "0 snapshots on this connection" in log[-1], log  # resumed by replay, not a snapshot
            page.screenshot(path=str(ARTIFACTS / "demo-after-drop.png"))
            assert errors == []
        finally:
            browser.close()
