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

# pyright (from the npm registry) checks the generated partial types the way editors will; optional.
if command -v npm >/dev/null && [ ! -x .refs/node/node_modules/.bin/pyright ]; then
    npm install --silent --no-audit --no-fund --prefix .refs/node pyright@1.1.400 >/dev/null || true
fi
export PATH="$PWD/.venv/bin:$PWD/.refs/node/node_modules/.bin:$PATH"

echo "== ruff"
.venv/bin/ruff check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest "$@"
