"""Every public callable checks its arguments at the door (issue #16).

The test walks ``__all__`` of every public namespace, and for each function, class and listed method gives each
parameter in turn a wrong-typed value (the others valid, from :data:`VALID`). No bare builtin error may escape:
what is raised is a turnkit error whose message names the parameter, and a value that the annotation plainly
excludes must not be accepted silently.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import turnkit
from tests.test_public_api import PUBLIC_NAMESPACES

WRONG: list[Any] = [None, 42, b"x", object(), "str"]

# Names in an ``__all__`` that are not called with arguments: protocols, type aliases, enums, abstract bases.
NOT_CALLABLES = {
    "AsyncModel",
    "Backend",
    "Delta",
    "KeySelection",
    "Message",
    "Model",
    "Op",
    "ParserBase",
    "ReasoningField",
    "Repair",
    "Severity",
    "FieldState",  # pydantic model: pydantic validates (and raises its ValidationError, a ValueError) by design
    "Run",  # made by Gateway.run(), not by callers
    "ChatRequest",  # built by the protocols from HTTP input, which they check field by field (BadRequestError)
    "StreamParser",  # made by OutputFormat.stream(), which checks
    "embedded_gateway",  # **options, forwarded to Gateway
}


def _tool(x: int) -> int:
    """Double it.

    Args:
        x: a number
    """
    return 2 * x


class _Model:
    pass


def _tokenizer() -> Any:
    from tokenizers import Tokenizer, models

    return Tokenizer(models.WordLevel({"a": 0, "<unk>": 1}, unk_token="<unk>"))


def _pydantic_model() -> type:
    from pydantic import BaseModel

    class Point(BaseModel):
        x: int

    return Point


TEMPLATE = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
MESSAGES = [{"role": "user", "content": "hi"}]
RESPONSE_TEMPLATE = {"start_anchor": "<|im_start|>assistant\n", "fields": {"content": {}}}
RESPONSE_SCHEMA = {"type": "object", "properties": {"content": {"type": "string"}}}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("args")
    rendered = root / "rows.jsonl"
    rendered.write_text(json.dumps({"messages": MESSAGES, "generated_text": "hello"}) + "\n")
    template = root / "t.jinja"
    template.write_text(TEMPLATE)
    folder = root / "model"
    turnkit.write_model_folder(folder, chat_template=TEMPLATE)
    return {"rows": rendered, "template": template, "folder": folder, "out": root / "out.jsonl", "root": root}


def _valid(files: dict[str, Path]) -> dict[str, Callable[[], dict[str, Any]]]:
    """Valid arguments (the required ones, and a few optional ones worth varying) per public callable."""
    from turnkit.outputs import MarkdownJsonDictParser, ModelResponse, TaggedContent
    from turnkit.serve import ReplayBackend, ReplayRecord
    from turnkit.structured import JsonStream, PathMap

    spec = turnkit.load_format("hermes").spec
    parser = MarkdownJsonDictParser()

    def gateway() -> Any:
        from turnkit.serve import Gateway

        return Gateway(TEMPLATE, "hermes", ReplayBackend([ReplayRecord("hi")]))

    return {
        # turnkit, turnkit.render, turnkit.parse
        "ChatTemplate": lambda: {"source": TEMPLATE, "special_tokens": {"bos_token": "<s>"}},
        "ChatTokenizer": lambda: {"tokenizer": _tokenizer(), "padding_side": "right", "model_max_length": 10},
        "Detection": lambda: {"format": "hermes", "reason": "r", "markers": ("<tool_call>",)},
        "FormatSpec": lambda: {"name": "n", "description": "d", "aliases": ("a",), "discard": ("x",)},
        "Limits": lambda: {"max_output_chars": 10, "regex_timeout_s": 1.0},
        "LintFinding": lambda: {"code": "c", "severity": "error", "message": "m", "hint": "h", "line": 1},
        "ModelFolder": lambda: {"chat_template": TEMPLATE, "template_kwargs": {}},
        "ModelFormat": lambda: {"format": None, "source": "none", "detection": None},
        "OutputFormat": lambda: {"spec": spec},
        "ResponseSchema": lambda: {"schema": RESPONSE_SCHEMA},
        "ResponseTemplateFormat": lambda: {"template": RESPONSE_TEMPLATE},
        "apply_chat_template": lambda: {
            "conversation": MESSAGES,
            "chat_template": TEMPLATE,
            "tools": [_tool],
            "documents": [{"title": "t", "text": "x"}],
            "add_generation_prompt": True,
            "template_name": None,
        },
        "detect_format": lambda: {"template_or_folder": TEMPLATE},
        "get_json_schema": lambda: {"func": _tool},
        "lint": lambda: {"template": TEMPLATE, "engines": (), "path": None},
        "list_formats": dict,
        "load_format": lambda: {"name": "hermes"},
        "model_format": lambda: {"path": files["folder"]},
        "parse_response": lambda: {"text": "hi", "schema": RESPONSE_SCHEMA},
        "parse_response_template": lambda: {"text": "hi", "template": RESPONSE_TEMPLATE, "prefix": "", "tools": []},
        "read_model_folder": lambda: {"path": files["folder"]},
        "write_model_folder": lambda: {
            "path": files["root"] / "written",
            "chat_template": TEMPLATE,
            "template_kwargs": {"bos_token": "<s>"},
            "response_template": RESPONSE_TEMPLATE,
        },
        "Harmony": lambda: {
            "header_opens": ("<|start|>",),
            "message": "<|message|>",
            "ends": ("<|end|>",),
            "reasoning_channels": ("analysis",),
            "recipient_prefix": "functions.",
            "starts_in_header_after": "<|start|>assistant",
        },
        "JsonArgs": lambda: {"name_ends": ("\n",), "name_prefix": "p"},
        "JsonCalls": lambda: {"name_keys": ("name",), "fence": False},
        "KeyedDict": lambda: {"name_prefix": "p", "quote": '"'},
        "Pythonic": lambda: {"bracketed": True, "name_suffix": ""},
        "Reasoning": lambda: {"starts": ("<think>",), "ends": ("</think>",)},
        "Section": lambda: {"open": "<a>", "close": "</a>", "calls": ()},
        "ToolRegion": lambda: {"open": "<a>", "body": turnkit.parse.Pythonic()},
        "XmlParams": lambda: {
            "function_open": "<f=",
            "name_ends": (">",),
            "param_open": "<p=",
            "key_ends": ((">", "</p>"),),
            "param_close": "</p>",
            "function_close": "</f>",
        },
        "format_markers": lambda: {"spec": spec},
        "load_response_template": lambda: {"spec": RESPONSE_TEMPLATE},
        "reasoning_format": lambda: {"start": "<t>", "end": "</t>", "name": "x"},
        "register_format": lambda: {"spec": spec},
        # turnkit.batch
        "Parser": lambda: {"format": "hermes", "text_column": "generated_text"},
        "Renderer": lambda: {"template": str(files["template"]), "messages_column": "messages"},
        "Summary": lambda: {"rows": 1, "errors": 0, "seconds": 0.5, "first_errors": []},
        "parse": lambda: {
            "input": files["rows"],
            "output": files["out"],
            "format": "hermes",
            "workers": 1,
            "batch_size": 8,
        },
        "postprocess": lambda: {"format": "hermes", "text_column": "generated_text"},
        "preprocess": lambda: {"template": str(files["template"]), "sampling_params": {"max_tokens": 4}},
        "render": lambda: {"input": files["rows"], "output": files["out"], "template": str(files["template"])},
        "renderer": lambda: {"template": str(files["template"])},
        "run": lambda: {"worker": turnkit.batch.Parser("hermes"), "input": files["rows"], "output": files["out"]},
        # turnkit.lint
        "Rule": lambda: {"code": "c", "severity": "error", "title": "t", "hint": "h", "bad": "b", "good": "g"},
        # turnkit.outputs
        "DictFilterMixin": lambda: {"keys_to_memory": True, "keys_to_content": ["a"]},
        "JsonReplyStream": lambda: {"parser": parser},
        "MarkdownCodeBlockParser": lambda: {"language_name": "python", "content_hint": "code"},
        "MarkdownJsonDictParser": lambda: {"required_keys": ["a"], "keys_to_memory": ["a"]},
        "MarkdownJsonObjectParser": lambda: {"schema": {"type": "object"}},
        "ModelResponse": lambda: {"text": "t", "repairs_applied": []},
        "MultiTaggedContentParser": lambda: {"*": [TaggedContent("a", "<a>", "x", "</a>")], "keys_allow_missing": []},
        "ReplyStream": lambda: {"parser": parser},
        "TaggedContent": lambda: {"name": "a", "tag_begin": "<a>", "content_hint": "x", "tag_end": "</a>"},
        "TaggedReplyStream": lambda: {"parser": parser, "tagged_contents": [TaggedContent("a", "<a>", "x", "</a>")]},
        "aparse_with_retry": lambda: {"parser": parser, "model": _async_model, "messages": MESSAGES, "max_retries": 1},
        "parse_with_retry": lambda: {"parser": parser, "model": _sync_model, "messages": MESSAGES, "max_retries": 1},
        "retry_message": lambda: {"error": turnkit.OutputParseError("bad", feedback="f"), "parser": parser},
        # turnkit.serve
        "BackendChunk": lambda: {"text": "t"},
        "ChatRequest": lambda: {"messages": MESSAGES, "tools": []},
        "CompletionsBackend": lambda: {"url": "http://127.0.0.1:1/v1", "model": "m", "timeout": 1.0},
        "Gateway": lambda: {
            "template": TEMPLATE,
            "output_format": "hermes",
            "backend": ReplayBackend([ReplayRecord("hi")]),
            "template_kwargs": {},
            "tool_functions": {"f": _tool},
            "max_steps": 2,
        },
        "ReplayBackend": lambda: {"records": [ReplayRecord("hi")], "delay": 0.0},
        "ReplayRecord": lambda: {"output": "o", "chunk": 2},
        "SamplingParams": lambda: {"max_tokens": 3, "temperature": 0.5, "stop": ("x",)},
        "Usage": lambda: {"prompt_tokens": 1},
        "backend_from_spec": lambda: {"spec": "http://127.0.0.1:1"},
        "create_app": lambda: {"gateway": gateway(), "api_key": "k"},
        "embedded_replay": lambda: {"delay": 0.0},
        "embedded_template": dict,
        "sse_comment": lambda: {"text": "t"},
        "sse_event": lambda: {"data": "d", "event": "e", "retry": 3},
        "sse_response": lambda: {"events": _events(), "headers": {"a": "b"}},
        # turnkit.structured
        "FunctionTransform": lambda: {"fn": lambda v: v},
        "ItemsWhenComplete": dict,
        "JsonStream": lambda: {"skip_prefix": True},
        "OpDecoder": dict,
        "OpEncoder": dict,
        "PartialMarkers": lambda: {"stream": JsonStream(), "marker": "$p"},
        "PathMap": lambda: {"source": "/a", "target": "/b"},
        "RequireFields": lambda: {"*": ["a"]},
        "Rfc6902Downgrader": lambda: {"coalesce": True},
        "Stream": dict,
        "StructuredStream": lambda: {"schema": {"type": "object"}, "skip_prefix": False},
        "Transform": lambda: {"*": [PathMap("/a", "/b")], "keep": True},
        "WhenComplete": dict,
        "WithState": dict,
        "apply_patch": lambda: {"doc": {}, "ops": [{"op": "add", "path": "/a", "value": 1}]},
        "coalesce_ops": lambda: {"ops": [{"op": "add", "path": "/a", "value": 1}]},
        "decode_ops": lambda: {"text": turnkit.structured.encode_ops([{"op": "add", "path": "/a", "value": 1}])},
        "encode_ops": lambda: {"ops": [{"op": "add", "path": "/a", "value": 1}]},
        "loads": lambda: {"text": "[1]", "skip_prefix": False},
        "loads_partial": lambda: {"text": "[1", "skip_prefix": False},
        "partial_model": lambda: {"model": _pydantic_model()},
        "partial_types_module": lambda: {"model": _pydantic_model(), "origin": "m"},
        "to_rfc6902": lambda: {"ops": [{"op": "add", "path": "/a", "value": 1}], "doc_before": {}},
        # ModelResponse-taking methods
        "_response": lambda: {"response": ModelResponse(text='```json\n{"a": 1}\n```')},
    }


# Methods of public classes that take arguments: (class name, make an instance, method, valid arguments)
METHODS: list[tuple[str, Callable[[], Any], str, Callable[[], dict[str, Any]]]] = [
    ("OutputFormat", lambda: turnkit.load_format("hermes"), "parse", lambda: {"text": "hi", "prefix": "", "tools": []}),
    ("OutputFormat", lambda: turnkit.load_format("hermes"), "stream", lambda: {"prefix": "", "tools": []}),
    ("OutputFormat", lambda: turnkit.load_format("hermes"), "astream", lambda: {"chunks": _chunks(), "tools": []}),
    (
        "ResponseTemplateFormat",
        lambda: turnkit.ResponseTemplateFormat(RESPONSE_TEMPLATE),
        "parse",
        lambda: {"text": "hi", "prefix": "", "tools": []},
    ),
    (
        "ResponseTemplateFormat",
        lambda: turnkit.ResponseTemplateFormat(RESPONSE_TEMPLATE),
        "stream",
        lambda: {"prefix": "", "tools": []},
    ),
    (
        "ResponseTemplateFormat",
        lambda: turnkit.ResponseTemplateFormat(RESPONSE_TEMPLATE),
        "astream",
        lambda: {"chunks": _chunks(), "tools": []},
    ),
    ("ResponseSchema", lambda: turnkit.ResponseSchema(RESPONSE_SCHEMA), "parse", lambda: {"text": "hi"}),
    ("ChatTemplate", lambda: turnkit.ChatTemplate(TEMPLATE), "render", lambda: {"conversation": MESSAGES, "tools": []}),
    (
        "MarkdownJsonDictParser",
        lambda: turnkit.outputs.MarkdownJsonDictParser(),
        "parse",
        lambda: {"response": '```json\n{"a": 1}\n```'},
    ),
    ("JsonStream", lambda: _json_stream(), "astream", lambda: {"chunks": _chunks()}),
    ("JsonStream", lambda: _json_stream(), "annotated", lambda: {"marker": "$p"}),
    ("StructuredStream", lambda: _structured_stream(), "astream", lambda: {"chunks": _chunks()}),
    (
        "ReplyStream",
        lambda: turnkit.outputs.MarkdownJsonDictParser().stream(),
        "astream",
        lambda: {"chunks": _chunks()},
    ),  # noqa: E501
]


def _json_stream() -> Any:
    from turnkit.structured import JsonStream

    return JsonStream()


def _structured_stream() -> Any:
    from turnkit.structured import StructuredStream

    return StructuredStream({"type": "object"})


async def _chunks() -> Any:
    for piece in ("[", "1]"):
        yield piece


async def _events() -> Any:
    yield b"data: x\n\n"


def _sync_model(messages: Any) -> str:
    return '```json\n{"a": 1}\n```'


async def _async_model(messages: Any) -> str:
    return '```json\n{"a": 1}\n```'


def _public_callables() -> list[tuple[str, str, Any]]:
    seen: set[int] = set()
    found = []
    for namespace in PUBLIC_NAMESPACES:
        module = importlib.import_module(namespace)
        for name in module.__all__:
            value = getattr(module, name)
            if id(value) in seen or name in NOT_CALLABLES or not callable(value) or inspect.ismodule(value):
                continue
            if isinstance(value, type) and issubclass(value, BaseException):
                continue
            seen.add(id(value))
            found.append((namespace, name, value))
    return found


CALLABLES = _public_callables()


def _accepts(annotation: Any, default: Any, wrong: Any) -> bool:
    """Whether the annotation (a string under ``from __future__ import annotations``) admits ``wrong``."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    words = set(re.findall(r"[A-Za-z_]+", text))
    if annotation is inspect.Parameter.empty or words & {"Any", "object", "T", "M"}:
        return True
    if wrong is None:
        return "None" in words or default is None or "Optional" in words
    if wrong == 42:
        return bool(words & {"int", "float"})
    if isinstance(wrong, bytes):
        return "bytes" in words
    if isinstance(wrong, str):
        containers = {"Sequence", "list", "tuple", "Mapping", "dict", "Iterable", "Conversation", "Tools", "set"}
        return "str" in words or "PathLike" in words or not words & containers or text.startswith("Literal")
    return False  # object()


def _call(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    result = fn(*args, **kwargs)
    if inspect.iscoroutine(result):
        return asyncio.run(result)
    if inspect.isasyncgen(result):

        async def drain() -> list[Any]:
            return [item async for item in result]

        return asyncio.run(drain())
    return result


def _cases(
    fn: Callable[..., Any], make_valid: Callable[[], dict[str, Any]]
) -> list[tuple[str, Any, list[Any], dict[str, Any]]]:
    """(parameter, wrong value, positional args, keyword args) for every parameter and every wrong value.

    The valid values are made afresh for each case (generators and streams among them are used once).
    """
    params = list(inspect.signature(fn).parameters.values())
    cases = []
    for param in params:
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        for wrong in WRONG:
            if _accepts(param.annotation, param.default, wrong):
                continue
            kwargs = make_valid()
            star = list(kwargs.pop("*", []))
            if param.kind is inspect.Parameter.VAR_POSITIONAL:
                star.append(wrong)
            else:
                kwargs[param.name] = wrong
            positional = [kwargs.pop(p.name) for p in params if p.kind is p.POSITIONAL_ONLY and p.name in kwargs]
            cases.append((param.name, wrong, [*positional, *star], kwargs))
    return cases


def _check(label: str, fn: Callable[..., Any], name: str, wrong: Any, args: list[Any], kwargs: dict[str, Any]) -> None:
    try:
        _call(fn, args, kwargs)
    except turnkit.TurnkitError as err:
        assert repr(name) in str(err) or name in str(err), f"{label}({name}={wrong!r}): {type(err).__name__}: {err}"
        return
    except (TypeError, AttributeError, KeyError, ValueError, IndexError) as err:
        pytest.fail(f"{label}({name}={wrong!r}) raised a bare {type(err).__name__}: {err}")
    pytest.fail(f"{label}({name}={wrong!r}) accepted a {type(wrong).__name__} silently")


def test_the_valid_table_covers_every_public_callable(files: dict[str, Path]) -> None:
    table = _valid(files)
    missing = [f"{ns}.{name}" for ns, name, _ in CALLABLES if name not in table]
    assert not missing


def test_the_valid_examples_are_valid(files: dict[str, Path]) -> None:
    table = _valid(files)
    failed = []
    for _ns, name, fn in CALLABLES:
        valid = table[name]()
        try:
            _call(fn, valid.pop("*", []), valid)
        except Exception as err:  # noqa: BLE001 - listed together below
            failed.append(f"{name}: {type(err).__name__}: {err}")
    for owner, make, method, valid_method in METHODS:
        try:
            _call(getattr(make(), method), [], valid_method())
        except Exception as err:  # noqa: BLE001
            failed.append(f"{owner}.{method}: {type(err).__name__}: {err}")
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize(("namespace", "name", "fn"), CALLABLES, ids=[f"{ns}.{n}" for ns, n, _ in CALLABLES])
def test_wrong_arguments_are_named(files: dict[str, Path], namespace: str, name: str, fn: Any) -> None:
    for param, wrong, args, kwargs in _cases(fn, _valid(files)[name]):
        _check(f"{namespace}.{name}", fn, param, wrong, args, kwargs)


@pytest.mark.parametrize(
    ("owner", "make", "method", "valid"), METHODS, ids=[f"{owner}.{method}" for owner, _, method, _ in METHODS]
)
def test_wrong_method_arguments_are_named(
    owner: str, make: Callable[[], Any], method: str, valid: Callable[[], dict[str, Any]]
) -> None:
    for param, wrong, args, kwargs in _cases(getattr(make(), method), valid):
        _check(f"{owner}.{method}", getattr(make(), method), param, wrong, args, kwargs)


def test_the_issue_examples() -> None:
    with pytest.raises(turnkit.ArgumentTypeError, match=r"apply_chat_template\(\) argument 'chat_template'.*NoneType"):
        turnkit.apply_chat_template(MESSAGES, None)  # type: ignore[arg-type]
    fmt = turnkit.load_format("hermes")
    with pytest.raises(turnkit.ArgumentTypeError, match=r"'text' must be str, not bytes"):
        fmt.parse(b"...")  # type: ignore[arg-type]
    with pytest.raises(turnkit.ArgumentTypeError, match=r"'text' must be str, not NoneType"):
        fmt.parse(None)  # type: ignore[arg-type]
    from turnkit.structured import StructuredStream

    with pytest.raises(turnkit.ArgumentTypeError, match=r"StructuredStream\(\) argument 'schema'"):
        StructuredStream(42)
    with pytest.raises(turnkit.ArgumentTypeError, match=r"'tools' must be a list"):
        turnkit.apply_chat_template(MESSAGES, TEMPLATE, tools="f")  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # still a TypeError for callers that do not know turnkit
        fmt.parse(None)  # type: ignore[arg-type]
