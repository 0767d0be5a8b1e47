#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh machine (Python 3.11, pip, git), then run
# lint, type-check and the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# .[test] includes tokenizers, pyarrow, rich, datasets and ray[data] (large, for the Ray engine test).
.venv/bin/python -m pip install -q -e ".[test]"
# transformers 5.12.1 is the last release with the x-regex `parse_response`; it is the reference for
# the parse_response differential test and lives beside the 5.23 install, imported only by that test.
if [ ! -f .refs/transformers-5.12.1/transformers/__init__.py ]; then
    .venv/bin/python -m pip install -q --no-deps --target .refs/transformers-5.12.1 "transformers==5.12.1"
fi

# Node packages for the tests, installed into the ignored folder .refs/node (one npm call, when any is missing):
# pyright checks the generated partial types the way editors will; `ai` and `@ag-ui/client` (+ fast-json-patch)
# are the real clients of the serve contract tests; @huggingface/jinja is an engine of the cross-engine lint.
# Without Node those tests skip and say so; under CI=true a missing package fails them.
NODE_PACKAGES=(pyright@1.1.400 ai@7 @ag-ui/client@1 fast-json-patch@3 @huggingface/jinja@0.5.11)
if command -v npm >/dev/null; then
    for package in "${NODE_PACKAGES[@]}"; do
        name="${package%@*}"
        if [ ! -f ".refs/node/node_modules/$name/package.json" ]; then
            npm install --silent --no-audit --no-fund --prefix .refs/node "${NODE_PACKAGES[@]}" >/dev/null
            break
        fi
    done
fi
# Chromium for the /demo browser test (tests/serve/test_demo_browser.py, Playwright from the test extra drives
# Debian's chromium; it downloads no browser), with CJK and emoji fonts for the screenshots. Installed only when
# missing, and only as root with apt-get; otherwise the test skips (fails under CI=true) and says why.
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null \
    && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-cjk fonts-noto-color-emoji >/dev/null
fi
export PATH="$PWD/.venv/bin:$PWD/.refs/node/node_modules/.bin:$PATH"

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest "$@"
