#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh machine (Python 3.11, pip, git), then run
# lint, type-check and the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
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
# The real AG-UI and AI SDK clients for the Node contract tests (tests/serve/test_node_contract.py; they fail
# under CI=true when missing).
if command -v npm >/dev/null && [ ! -f .refs/node/node_modules/@ag-ui/client/package.json ]; then
    npm install --silent --no-audit --no-fund --prefix .refs/node ai@7 @ag-ui/client@1 fast-json-patch@3 >/dev/null
fi
export PATH="$PWD/.venv/bin:$PWD/.refs/node/node_modules/.bin:$PATH"

echo "== ruff"
.venv/bin/ruff check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
.venv/bin/python -m pytest "$@"
