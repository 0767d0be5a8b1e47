"""Typed partials: the runtime partial model, the generated module, the CLI, and mypy on user code."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError

from tests.clirun import run_cli
from tests.corpora import REPO_ROOT
from turnkit.errors import UsageError
from turnkit.structured import (
    FieldState,
    ItemsWhenComplete,
    StructuredStream,
    WhenComplete,
    WithState,
    partial_model,
    partial_types_module,
)


class Line(BaseModel):
    emoji: Annotated[str, WhenComplete()]
    text: str


class Node(BaseModel):
    name: str
    children: list[Node] = []


class Review(BaseModel):
    title: str
    stars: int
    mood: Literal["good", "bad"]
    lines: list[Line]
    tags: Annotated[list[str], ItemsWhenComplete()]
    verdict: Annotated[str, WithState()]
    best: Line | None = None
    tree: Node | None = None
    summary_v2: list[str] = Field(default_factory=list, alias="summaryV2")


def test_partial_model_accepts_every_prefix_shape() -> None:
    partial = partial_model(Review)
    empty = partial.model_validate({})
    assert empty.model_dump() == {
        "title": None, "stars": None, "mood": None, "lines": None, "tags": None,
        "verdict": {"state": "pending", "value": None}, "best": None, "tree": None, "summary_v2": None,
    }  # fmt: skip
    value = partial.model_validate(
        {"title": "He", "lines": [{"text": "a"}], "tree": {"children": [{"name": "x"}]}, "summaryV2": ["s"]}
    )
    dumped = value.model_dump(exclude_none=True)
    assert dumped["lines"] == [{"text": "a"}]
    assert dumped["tree"] == {"children": [{"name": "x"}]}
    assert dumped["summary_v2"] == ["s"]
    assert partial_model(Review) is partial  # cached


def test_partial_model_keeps_complete_types_strict() -> None:
    partial = partial_model(Review)
    with pytest.raises(ValidationError):
        partial.model_validate({"mood": "meh"})  # a WhenComplete (Literal) field is never partial
    with pytest.raises(ValidationError):
        partial.model_validate({"stars": "many"})


def test_stream_partial_is_typed() -> None:
    s = StructuredStream(Review)
    s.feed('{"title": "Gre')
    partial = s.partial
    assert partial is not None and partial.title == "Gre"  # type: ignore[attr-defined]
    assert isinstance(partial.verdict, FieldState)  # type: ignore[attr-defined]


def test_generated_module_matches_the_runtime_partial(tmp_path: Path) -> None:
    models = _write_models(tmp_path, "pt_models_a")
    spec_models = _import(models)
    generated = tmp_path / "pt_partial_a.py"
    generated.write_text(partial_types_module(spec_models.Review, origin="pt_models_a:Review"))
    module = _import(generated)
    assert module.__all__ == sorted(module.__all__)
    runtime = partial_model(spec_models.Review)
    assert module.PartialReview.model_json_schema() == runtime.model_json_schema()


def test_locally_defined_classes_cannot_be_written_to_a_file() -> None:
    class Local(BaseModel):
        x: int

    class UsesLocal(BaseModel):
        local: Annotated[Local, WhenComplete()]  # a complete Local must be imported by the file

    assert "PartialUsesLocal" in partial_model(UsesLocal).__name__  # run time is fine
    with pytest.raises(UsageError, match="not importable"):
        partial_types_module(UsesLocal)


MODELS = """
from __future__ import annotations

import enum
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from turnkit.structured import ItemsWhenComplete, WhenComplete, WithState


class Mood(enum.Enum):
    GOOD = "good"
    BAD = "bad"


class Line(BaseModel):
    emoji: Annotated[str, WhenComplete()]
    text: str


class Review(BaseModel):
    title: str
    mood: Mood
    stars: int
    lines: list[Line]
    tags: Annotated[list[str], ItemsWhenComplete()]
    verdict: Annotated[Literal["buy", "skip"], WithState()]
    related: list[Review] = Field(default_factory=list)
"""

GOOD_USE = """
from __future__ import annotations

from {partial} import PartialLine, PartialReview
from {models} import Mood


def headline(p: PartialReview) -> str:
    out = p.title or ""
    for line in p.lines or []:
        if line.emoji is not None:
            out += line.emoji
        out += (line.text or "").upper()
    if p.mood is Mood.GOOD:
        out += "!"
    if p.verdict.state == "complete" and p.verdict.value is not None:
        out += p.verdict.value
    first: PartialLine | None = p.lines[0] if p.lines else None
    return out + (first.text or "" if first else "") + str((p.stars or 0) + 1)
"""

BAD_USE = """
from __future__ import annotations

from {partial} import PartialReview


def headline(p: PartialReview) -> str:
    a = p.title.upper()  # BAD1 title may be missing
    b: int = p.stars  # BAD2 stars may be missing
    c = p.lines[0]  # BAD3 lines may be missing
    d: str = p.verdict.value  # BAD4 a pending field has no value
    e: int = p.tags[0] if p.tags else 0  # BAD5 items are str
    return a + str(b) + str(c) + d + str(e)
"""


def _generate_user_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Write models, generate their partial types with the real CLI, write good and bad user code."""
    (tmp_path / "pt_models_b.py").write_text(MODELS)
    monkeypatch.chdir(tmp_path)
    out = run_cli("partial-types", "pt_models_b:Review", "-o", "pt_partial_b.py")
    assert out.returncode == 0, out.stderr
    assert "class PartialReview(BaseModel)" in (tmp_path / "pt_partial_b.py").read_text()
    (tmp_path / "pt_rich_b.py").write_text(RICH_MODELS)
    out = run_cli("partial-types", "pt_rich_b:Rich", "-o", "pt_rich_partial_b.py")
    assert out.returncode == 0, out.stderr
    (tmp_path / "good_use.py").write_text(GOOD_USE.format(partial="pt_partial_b", models="pt_models_b"))
    (tmp_path / "bad_use.py").write_text(BAD_USE.format(partial="pt_partial_b"))
    bad_source = BAD_USE.format(partial="pt_partial_b").splitlines()
    return [f"bad_use.py:{i}:" for i, text in enumerate(bad_source, 1) if "# BAD" in text]


def test_cli_writes_types_that_mypy_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad_lines = _generate_user_code(tmp_path, monkeypatch)
    env = dict(os.environ, MYPYPATH=os.pathsep.join([str(REPO_ROOT / "src"), str(tmp_path)]))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / ".mypy_cache"),
         "--no-error-summary", "good_use.py", "bad_use.py", "pt_partial_b.py", "pt_rich_partial_b.py"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )  # fmt: skip
    lines = result.stdout.splitlines()
    clean = ("good_use.py", "pt_partial_b.py", "pt_rich_partial_b.py")
    assert not [line for line in lines if line.startswith(clean)], result.stdout
    assert len(bad_lines) == 5
    for where in bad_lines:
        assert any(line.startswith(where) and ": error" in line for line in lines), (where, result.stdout)


@pytest.mark.skipif(shutil.which("pyright") is None, reason="pyright is not installed (npm install -g pyright)")
def test_generated_types_check_under_pyright_strict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad_lines = _generate_user_code(tmp_path, monkeypatch)
    config = {"pythonVersion": "3.11", "typeCheckingMode": "strict", "extraPaths": [str(REPO_ROOT / "src")],
              "reportUnusedVariable": False}  # fmt: skip
    (tmp_path / "pyrightconfig.json").write_text(json.dumps(config))
    result = subprocess.run(
        ["pyright", "--pythonpath", sys.executable, "good_use.py", "bad_use.py", "pt_partial_b.py",
         "pt_rich_partial_b.py"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    errors = [line.strip().removeprefix(str(tmp_path) + os.sep) for line in result.stdout.splitlines()
              if " - error: " in line]  # fmt: skip
    clean = ("good_use.py", "pt_partial_b.py", "pt_rich_partial_b.py")
    assert not [line for line in errors if line.startswith(clean)], result.stdout
    for where in bad_lines:
        assert any(line.startswith(where) for line in errors), (where, result.stdout)


def test_cli_stdout_and_help() -> None:
    out = run_cli("partial-types", "tests.structured.test_partial_types:Line")
    assert out.returncode == 0, out.stderr
    assert "class PartialLine(BaseModel):" in out.stdout
    assert "    emoji: str | None = None" in out.stdout
    compile(out.stdout, "<generated>", "exec")
    helped = run_cli("partial-types", "--help")
    assert helped.returncode == 0 and "module:Model" in helped.stdout
    assert "partial-types" in run_cli("--help").stdout


@pytest.mark.parametrize(
    "target,message",
    [
        ("no_such_module_xyz:Model", "cannot import module 'no_such_module_xyz'"),
        ("tests.structured.test_partial_types:Missing", "has no attribute 'Missing'"),
        ("tests.structured.test_partial_types:MODELS", "is not a pydantic model class"),
        ("just_a_module", "expected module:Model"),
    ],
)
def test_cli_bad_targets_are_one_line_exit_2(target: str, message: str) -> None:
    out = run_cli("partial-types", target)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr


def test_cli_rejects_models_it_cannot_import_from_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pt_models_c.py").write_text(
        "from typing import Annotated\nfrom pydantic import BaseModel\nfrom turnkit.structured import WhenComplete\n"
        "def make():\n    class Inner(BaseModel):\n        x: int\n    return Inner\n\n"
        "class Outer(BaseModel):\n    inner: Annotated[make(), WhenComplete()]  # type: ignore\n"
    )
    monkeypatch.chdir(tmp_path)
    out = run_cli("partial-types", "pt_models_c:Outer")
    assert out.returncode == 2 and "not importable" in out.stderr, out.stderr


def _write_models(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(MODELS)
    return path


def _import(path: Path) -> Any:
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(path.parent))


def test_review_json_roundtrip_through_partial() -> None:
    doc = {"title": "t", "stars": 3, "mood": "good", "lines": [], "tags": [], "verdict": "v", "summaryV2": ["x"]}
    s = StructuredStream(Review)
    s.feed(json.dumps(doc))
    s.close()
    assert s.result == Review.model_validate(doc)
    partial = s.partial
    assert partial is not None
    assert partial.verdict == FieldState[str](state="complete", value="v")  # type: ignore[attr-defined]


RICH_MODELS = """
from __future__ import annotations

import datetime
import decimal
import enum
import uuid
from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, Union

from pydantic import BaseModel, Field, HttpUrl

from turnkit.structured import ItemsWhenComplete, RequireFields, Stream, WhenComplete, WithState


class Color(enum.Enum):
    RED = "red"


class Leaf(BaseModel):
    name: str


class Other(BaseModel):
    n: int


class Rich(BaseModel):
    when: datetime.datetime
    day: Optional[datetime.date] = None
    amount: decimal.Decimal
    ident: uuid.UUID
    url: HttpUrl
    color: Literal[Color.RED, "x", 3, None]
    loose: Annotated[Literal["a", "b"], Stream()]
    legacy: List[Dict[str, Leaf]]
    pair: Tuple[int, str]
    many: Tuple[Leaf, ...]
    either: Union[Leaf, Other]
    held: Annotated[Leaf, RequireFields("name")]
    whole: Annotated[Leaf, WhenComplete()]
    items: Annotated[list[Leaf], ItemsWhenComplete()]
    state: Annotated[list[Leaf], WithState()]
    anything: Any = None
    aliased: int = Field(default=0, alias="Aliased-Key")
"""


def test_rich_types_generate_importable_checked_code(tmp_path: Path) -> None:
    (tmp_path / "pt_rich.py").write_text(RICH_MODELS)
    models = _import(tmp_path / "pt_rich.py")
    source = partial_types_module(models.Rich, origin="pt_rich:Rich")
    (tmp_path / "pt_rich_partial.py").write_text(source)
    module = _import(tmp_path / "pt_rich_partial.py")
    fields = module.PartialRich.model_fields
    spelled = {name: line.split(":", 1)[1].split("=")[0].strip() for name, line in
               ((line.strip().split(":")[0], line.strip()) for line in source.splitlines() if ": " in line
                and line.startswith("    ") and not line.strip().startswith(('"', "model_config")))}  # fmt: skip
    assert spelled["when"] == "datetime | None"
    assert spelled["amount"] == "Decimal | None" and spelled["ident"] == "UUID | None"
    assert spelled["url"] == "HttpUrl | None"
    assert spelled["color"] == 'Literal[Color.RED, "x", 3, None] | None'
    assert spelled["loose"] == "str | None"  # streamed anyway: text so far
    assert spelled["legacy"] == "list[dict[str, PartialLeaf]] | None"
    assert spelled["pair"] == "tuple[int, str] | None"  # shown whole
    assert spelled["either"] == "PartialLeaf | PartialOther | None"
    assert spelled["whole"] == "Leaf | None" and spelled["items"] == "list[Leaf] | None"
    assert spelled["state"] == "FieldState[list[PartialLeaf]]"
    assert fields["aliased"].alias == "Aliased-Key"
    runtime = partial_model(models.Rich)
    assert module.PartialRich.model_json_schema() == runtime.model_json_schema()
    value = {"legacy": [{"k": {}}], "either": {"name": "x"}, "Aliased-Key": 3, "state": {"state": "incomplete"}}
    assert module.PartialRich.model_validate(value).aliased == 3
    # the file is tidy: lint-clean and already formatted
    lint = ["check", "--select", "E,F,I,UP,B"]
    for args in (lint, ["format", "--check"]):
        command = [sys.executable, "-m", "ruff", *args, "--line-length", "120", "--no-cache", "pt_rich_partial.py"]
        done = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
