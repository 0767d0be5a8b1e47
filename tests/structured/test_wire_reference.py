"""OpEncoder's fast paths write exactly what the plain encoder (json.dumps of the item list) writes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.structured import OpEncoder
from turnkit.structured._wire import _OP_CODE


def _relative(previous: str, path: str) -> str:
    old, new = previous.split("/"), path.split("/")
    common = 0
    while common < min(len(old), len(new)) and old[common] == new[common]:
        common += 1
    relative = f"{len(old) - common}{'/' if common < len(new) else ''}{'/'.join(new[common:])}"
    return relative if len(relative) < len(path) else path


class Reference:
    """The encoder before its fast paths: build the items, then one json.dumps."""

    def __init__(self) -> None:
        self.op, self.path = "add", ""

    def encode(self, ops: list[dict[str, Any]]) -> str:
        items: list[Any] = []
        for op in ops:
            name, path = op["op"], op["path"]
            if path == self.path and name == "append" and "from" not in op and isinstance(op.get("value"), str):
                items.append(op["value"])
                continue
            if name == self.op and path != self.path and "from" not in op:
                relative = _relative(self.path, path)
                items.append([relative, op["value"]] if "value" in op else [relative])
                self.path = path
                continue
            item: dict[str, Any] = {}
            if name != self.op:
                item["o"] = _OP_CODE.get(name, name)
                self.op = name
            if path != self.path:
                item["p"] = _relative(self.path, path)
                self.path = path
            for long, short in (("value", "v"), ("from", "f")):
                if long in op:
                    item[short] = op[long]
            items.append(item)
        text = json.dumps(items, ensure_ascii=False, separators=(",", ":"))
        return text.replace("-Infinity", "-1e999").replace("Infinity", "1e999")


_token = st.sampled_from(["a", "b", "0", "1", "", "~0", "x~1y", 'q"', "é", "sections", "12"])
_path = st.lists(_token, max_size=4).map(lambda tokens: "".join("/" + t for t in tokens))
_value = st.one_of(
    st.text(max_size=6),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.sampled_from([[], {}, [1, "a"], {"k": "v"}]),
)


@st.composite
def _batches(draw: st.DrawFn) -> list[list[dict[str, Any]]]:
    batches = []
    last = ""
    for _ in range(draw(st.integers(1, 10))):
        batch = []
        for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
            name = draw(st.sampled_from(["add", "append", "append", "replace", "remove", "move"]))
            path = draw(st.one_of(_path, st.just(last)))
            op: dict[str, Any] = {"op": name, "path": path}
            if name == "append":
                op["value"] = draw(st.one_of(st.text(max_size=5), st.integers()))
            elif name == "move":
                op["from"] = draw(_path)
            elif name != "remove":
                op["value"] = draw(_value)
            batch.append(op)
            last = path
        batches.append(batch)
    return batches


@settings(max_examples=400, deadline=None)
@given(_batches())
def test_fast_paths_match_the_reference_encoder(batches: list[list[dict[str, Any]]]) -> None:
    fast, reference = OpEncoder(), Reference()
    for batch in batches:
        assert fast.encode(batch) == reference.encode(batch)
