"""The cross-engine tests' one way to require an engine: skip where it is absent, fail under CI=true."""

from __future__ import annotations

import os

import pytest

from turnkit.lint._engines import engine_unavailable


def require_engines(*engines: str) -> None:
    for engine in engines:
        reason = engine_unavailable(engine)
        if reason is not None:
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(f"CI=true but {reason}")
            pytest.skip(reason)
