"""The browser client (src/turnkit/serve/static/turnkit.js) under Node: ``node --test tests/serve/js``.

Runs ``applyOps`` against the same conformance cases as the Python side (json-patch-tests and turnkit's
append cases) and against streams made here by :class:`PartialMarkers` (with ``annotated()`` after every
step). Skipped with a message where Node is absent; under ``CI=true`` that is a failure.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.chunking import random_chunks
from tests.corpora import REPO_ROOT, corpus_path
from turnkit._json import escape_token
from turnkit.structured import JsonStream, OpEncoder, PartialMarkers

JS = REPO_ROOT / "src" / "turnkit" / "serve" / "static" / "turnkit.js"
TESTS = Path(__file__).parent / "js"


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        reason = "node is not installed: the JS client's tests need Node 18+"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but {reason}")
        pytest.skip(reason)
    return node


def _partial_paths(marked: PartialMarkers) -> list[str]:
    paths: list[str] = []
    for pointer, marker in marked.current():
        path = pointer[: -len("/" + escape_token(marked.marker))]
        paths.append(path)
        paths.extend(path + "/" + escape_token(str(key)) for key in marker)
    return paths


def _fixture() -> list[dict[str, Any]]:
    rng = random.Random(13)
    texts = [
        json.dumps({"title": "Hello, world!", "tags": ["python", "llm"], "n": 0.875}),
        json.dumps({"a": [{"b": {"c": "x"}}, [1, {"d": "맛있어요 😀"}]], "e/f": {"~g": None}, "h": True}),
        json.dumps([{"summaryV2": [{"emoji": "🍽️", "text": "음식이 맛있어요"}]}, "s", [[], {}]]),
        '{"dup": {"x": 1}, "dup": {"y": "z"}, "$partial": 1}'.replace(', "$partial": 1', ""),
        json.dumps({"story": "x" * 5000 + '\n\t"q"', "big": 1e300}),
    ]
    streams = []
    for n, text in enumerate(texts):
        for cut in range(3):
            marked = PartialMarkers(JsonStream())
            encoder = OpEncoder()
            steps = []
            pieces = random_chunks(text, rng, max_size=[1, 4, 13][cut])
            for piece in [*pieces, None]:
                ops = marked.feed(piece) if piece is not None else marked.close()
                stream = marked.stream
                partial = _partial_paths(marked)
                step = {"ops": ops, "annotated": stream.annotated(), "value": stream.value, "partial": partial}
                step["compact"] = encoder.encode(ops)
                steps.append(json.loads(json.dumps(step)))  # now: the stream's value is live
            streams.append({"name": f"text {n} cut {cut}", "steps": steps})
    return streams


def test_js_client_under_node(tmp_path: Path) -> None:
    node = _node()
    corpora = corpus_path("json-patch-tests").parent
    fixture = tmp_path / "sync_fixture.json"
    fixture.write_text(json.dumps(_fixture(), ensure_ascii=False), encoding="utf-8")
    env = {
        **os.environ,
        "TURNKIT_JS": str(JS),
        "TURNKIT_CORPORA": str(corpora),
        "TURNKIT_APPEND_CASES": str(REPO_ROOT / "tests" / "structured" / "append_cases.json"),
        "TURNKIT_SYNC_FIXTURE": str(fixture),
    }
    done = subprocess.run(
        [node, "--test", str(TESTS / "turnkit.test.mjs")], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "# fail 0" in done.stdout


def test_wheel_ships_the_js_client() -> None:
    """The wheel packages everything under src/turnkit, the static client included."""
    import tomllib

    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel["packages"] == ["src/turnkit"]
    assert JS.is_file() and JS.is_relative_to(REPO_ROOT / "src" / "turnkit")
    excluded = json.dumps(config["tool"]["hatch"]["build"].get("exclude", [])) + json.dumps(wheel.get("exclude", []))
    assert ".js" not in excluded and "static" not in excluded
