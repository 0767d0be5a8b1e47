"""One row in, one row out: checking a row's fields, rendering (and tokenising) it, or parsing a model output.

A bad row never stops a run: its output row carries the input columns, empty results and an ``error`` string
that names the field (``messages[2].content: expected a string or a list of content blocks, got int``).
Row workers are plain picklable objects, so the same one runs in this process, in worker processes, in Ray Data
``map_batches`` and in ``datasets.map``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from turnkit._args import expect, expect_choice, expect_mapping, expect_path
from turnkit.batch._datasets import is_lazy_batch, lazy_rows, output_columns
from turnkit.errors import TemplateNotFoundError, TurnkitError

__all__ = ["ROLES", "Parser", "Renderer", "RowError", "columns_to_rows", "rows_to_columns"]

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function", "ipython"})
"""The roles a row's messages may have (the ones chat templates are written for)."""

GenerationPrompt = bool | Literal["auto"]


class RowError(TurnkitError, ValueError):
    """One row's input is unusable; ``field`` says which part (``messages[1].role``)."""

    code = "batch_row"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}", code="batch_row", pointer=None)
        self.field = field


def _loads(value: Any, field: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise RowError(field, f"is a string but not valid JSON ({exc.msg} at column {exc.colno})") from None
    return value


def check_messages(value: Any, field: str = "messages") -> list[dict[str, Any]]:
    """The row's messages, or a :class:`RowError` naming the first bad field."""
    if value is None:
        raise RowError(field, "missing (every row needs a list of messages)")
    value = _loads(value, field)
    if not isinstance(value, Sequence) or isinstance(value, str | bytes) or not value:
        raise RowError(field, f"expected a non-empty list of messages, got {_describe(value)}")
    messages = []
    for index, message in enumerate(value):
        where = f"{field}[{index}]"
        if not isinstance(message, Mapping):
            raise RowError(where, f"expected a message object, got {_describe(message)}")
        role = message.get("role")
        if not isinstance(role, str):
            raise RowError(f"{where}.role", f"expected a string role, got {_describe(role)}")
        if role not in ROLES:
            raise RowError(f"{where}.role", f"unknown role {role!r} (expected one of {', '.join(sorted(ROLES))})")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            if (
                not isinstance(content, Sequence)
                or isinstance(content, bytes)
                or not all(isinstance(block, Mapping) for block in content)
            ):
                raise RowError(
                    f"{where}.content", f"expected a string or a list of content blocks, got {_describe(content)}"
                )
        messages.append(message if type(message) is dict else dict(message))  # never mutated: no copy
    return messages


def check_tools(value: Any, field: str = "tools") -> list[dict[str, Any]] | None:
    """The row's tool schemas (``None`` when absent), or a :class:`RowError` naming the bad one."""
    if value is None:
        return None
    value = _loads(value, field)
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise RowError(field, f"expected a list of tool schemas, got {_describe(value)}")
    tools = []
    for index, tool in enumerate(value):
        where = f"{field}[{index}]"
        if not isinstance(tool, Mapping):
            raise RowError(where, f"expected a tool schema object, got {_describe(tool)}")
        function = tool.get("function", tool) if tool.get("type", "function") == "function" else tool
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise RowError(
                f"{where}.function.name" if "function" in tool else f"{where}.name", "a tool schema needs a string name"
            )
        parameters = function.get("parameters")
        if parameters is not None and not isinstance(parameters, Mapping):
            raise RowError(
                f"{where}.function.parameters", f"expected a JSON schema object, got {_describe(parameters)}"
            )
        tools.append(tool if type(tool) is dict else dict(tool))
    return tools


def check_documents(value: Any, field: str = "documents") -> list[dict[str, Any]] | None:
    """The row's documents (``None`` when absent), or a :class:`RowError`."""
    if value is None:
        return None
    value = _loads(value, field)
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise RowError(field, f"expected a list of documents, got {_describe(value)}")
    for index, document in enumerate(value):
        if not isinstance(document, Mapping):
            raise RowError(f"{field}[{index}]", f"expected a document object, got {_describe(document)}")
    return [document if type(document) is dict else dict(document) for document in value]


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    return type(value).__name__


class Renderer:
    """Render rows through a chat template: ``renderer(row) -> output row``; ``renderer(columns)`` for batches.

    ``model`` is a model folder (template, special tokens and ``tokenizer.json``), or ``template`` a template file
    or text. ``tokenize`` adds ``input_ids``; ``masks`` adds ``assistant_masks`` (implies ``tokenize``).
    ``add_generation_prompt="auto"`` adds it when the last message is not the assistant's (Ray Data LLM's rule).
    """

    def __init__(
        self,
        *,
        model: str | os.PathLike[str] | None = None,
        template: str | os.PathLike[str] | None = None,
        tokenizer: str | os.PathLike[str] | None = None,
        tokenize: bool = False,
        masks: bool = False,
        messages_column: str = "messages",
        tools_column: str | None = "tools",
        documents_column: str | None = "documents",
        add_generation_prompt: GenerationPrompt = False,
        keep_columns: bool = True,
        template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        _f = "Renderer"
        expect_path(model, name="model", func=_f, none=True)
        expect_path(template, name="template", func=_f, none=True)
        expect_path(tokenizer, name="tokenizer", func=_f, none=True)
        expect(tokenize, bool, name="tokenize", func=_f)
        expect(masks, bool, name="masks", func=_f)
        expect(messages_column, str, name="messages_column", func=_f)
        expect(tools_column, str, name="tools_column", func=_f, none=True)
        expect(documents_column, str, name="documents_column", func=_f, none=True)
        expect_choice(add_generation_prompt, (False, True, "auto"), name="add_generation_prompt", func=_f)
        expect(keep_columns, bool, name="keep_columns", func=_f)
        expect_mapping(template_kwargs, name="template_kwargs", func=_f, none=True)
        if (model is None) == (template is None):
            raise TurnkitError(
                "give exactly one of model= (a model folder) or template= (a template file or text)", code="batch_usage"
            )
        self.model = os.fspath(model) if model is not None else None
        self.template = os.fspath(template) if isinstance(template, os.PathLike) else template
        self.tokenizer = os.fspath(tokenizer) if tokenizer is not None else None
        self.tokenize = tokenize or masks
        self.masks = masks
        self.messages_column = messages_column
        self.tools_column = tools_column
        self.documents_column = documents_column
        self.add_generation_prompt = add_generation_prompt
        self.keep_columns = keep_columns
        self.template_kwargs = dict(template_kwargs or {})
        self._chat: Any = None
        self.chat_template()  # fail now (template or tokenizer unreadable), not on every row

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_chat"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def chat_template(self) -> Any:
        """The compiled template (built once per process)."""
        if self._chat is None:
            from turnkit.render import ChatTemplate

            if self.model is not None:
                chat = ChatTemplate.from_pretrained(self.model)
            else:
                source = self.template or ""
                if "{" not in source and "\n" not in source:  # a path: template text always has a {
                    try:
                        with open(source, encoding="utf-8") as handle:
                            source = handle.read()
                    except OSError as exc:
                        raise TemplateNotFoundError(
                            f"cannot read the chat template file {source!r}: {exc.strerror or exc}"
                        ) from exc
                chat = ChatTemplate(source, special_tokens=self.template_kwargs, tokenizer=self.tokenizer)
            if self.tokenize and self.tokenizer is not None and self.model is not None:
                chat = ChatTemplate(
                    chat.source, special_tokens=chat.special_tokens, limits=chat.limits, tokenizer=self.tokenizer
                )
            if self.tokenize and chat.tokenizer is None:
                raise TurnkitError(
                    "tokenizing needs a tokenizer.json: use a model folder that has one, or pass a tokenizer",
                    code="batch_usage",
                )
            self._chat = chat
        return self._chat

    @property
    def output_columns(self) -> list[str]:
        """The columns this renderer adds to each row."""
        columns = ["prompt"]
        if self.tokenize:
            columns.append("input_ids")
        if self.masks:
            columns.append("assistant_masks")
        return [*columns, "error"]

    @property
    def int_columns(self) -> list[str]:
        """The output columns that hold lists of non-negative ints (token ids, masks) or ``None``."""
        return [column for column in ("input_ids", "assistant_masks") if column in self.output_columns]

    def __call__(self, row_or_columns: Mapping[str, Any]) -> dict[str, Any]:
        """A row (``{"messages": [...]}``) gives a row; columns (``{"messages": [[...], ...]}``) give columns.

        A batch of ``datasets.Dataset.map(batched=True)`` gives only the output columns (``datasets`` keeps the
        input columns), token columns as NumPy arrays: see :mod:`turnkit.batch._datasets`."""
        if is_lazy_batch(row_or_columns):
            names = [self.messages_column, self.tools_column, self.documents_column]
            rows = self.rows(lazy_rows(row_or_columns, [name for name in names if name is not None]))
            return output_columns(rows, self.output_columns, self.int_columns)
        values = row_or_columns.get(self.messages_column)
        if isinstance(values, Sequence) and not isinstance(values, str) and values and _is_column(values):
            return rows_to_columns(self.rows(columns_to_rows(row_or_columns)), self.output_columns)
        return self.rows([row_or_columns])[0]

    def row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The output row for one input row; errors land in its ``error`` column."""
        return self.rows([row])[0]

    def rows(self, rows: Sequence[Mapping[str, Any]], *, mask_bytes: bool = False) -> list[dict[str, Any]]:
        """Output rows for input rows (tokenised together); a bad row gets an ``error``, the others go on.

        ``mask_bytes``: ``assistant_masks`` as ``bytes`` (a byte a token), not lists of ints: the file writers take
        them as they are, where a list of ~1,300 ints costs ~10 us a row to make and as much to turn back."""
        from turnkit.render._tokenize import render_with_spans

        chat = self.chat_template()
        outs: list[dict[str, Any]] = []
        spans: list[list[tuple[int, int]]] = []
        for row in rows:
            out: dict[str, Any] = dict(row) if self.keep_columns else {}
            for column in self.output_columns:
                out[column] = None
            outs.append(out)
            spans.append([])
            try:
                if "_invalid" in row:
                    raise RowError("row", str(row["_invalid"]))
                messages = check_messages(row.get(self.messages_column), self.messages_column)
                tools = check_tools(row.get(self.tools_column), self.tools_column) if self.tools_column else None
                documents = (
                    check_documents(row.get(self.documents_column), self.documents_column)
                    if self.documents_column
                    else None
                )
                generation = self.add_generation_prompt
                if generation == "auto":
                    generation = messages[-1].get("role") != "assistant"

                def render(
                    messages: Any = messages,
                    tools: Any = tools,
                    documents: Any = documents,
                    generation: bool = bool(generation),
                ) -> str:
                    text: str = chat.render(
                        messages, tools=tools, documents=documents, add_generation_prompt=generation
                    )
                    return text

                if self.masks:
                    out["prompt"], spans[-1] = render_with_spans(render)
                else:
                    out["prompt"] = render()
            except TurnkitError as exc:
                out["error"] = _error_text(exc)
            except Exception as exc:  # noqa: BLE001 - one bad row never stops the run
                out["error"] = f"{type(exc).__name__}: {exc}"
        if self.tokenize:
            done = [i for i, out in enumerate(outs) if out["error"] is None]
            try:
                encoded = chat.tokenizer.encode_plain(
                    [outs[i]["prompt"] for i in done],
                    [spans[i] for i in done] if self.masks else None,
                    mask_bytes=mask_bytes,
                )
            except TurnkitError as exc:  # the whole batch failed to tokenize: record it on every row
                for i in done:
                    outs[i]["error"] = _error_text(exc)
                return outs
            for i, (ids, mask) in zip(done, encoded, strict=True):
                outs[i]["input_ids"] = ids
                if self.masks:
                    outs[i]["assistant_masks"] = mask
        return outs


class Parser:
    """Parse raw model outputs into messages: ``parser(row) -> row`` with ``message`` (OpenAI wire form)."""

    def __init__(self, format: str, *, text_column: str = "generated_text", keep_columns: bool = True) -> None:  # noqa: A002
        from turnkit.parse import load_format

        expect(format, str, name="format", func="Parser")
        expect(text_column, str, name="text_column", func="Parser")
        expect(keep_columns, bool, name="keep_columns", func="Parser")
        load_format(format)  # unknown format: fail now
        self.format = format
        self.text_column = text_column
        self.keep_columns = keep_columns
        self._parser: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_parser": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    output_columns = ["message", "error"]

    def __call__(self, row_or_columns: Mapping[str, Any]) -> dict[str, Any]:
        """A row gives a row; columns give columns (of a ``datasets`` batch: the output columns only)."""
        if is_lazy_batch(row_or_columns):
            rows = self.rows(lazy_rows(row_or_columns, [self.text_column]))
            return output_columns(rows, self.output_columns, ())
        values = row_or_columns.get(self.text_column)
        if isinstance(values, Sequence) and not isinstance(values, str) and _is_column(values, text=True):
            return rows_to_columns([self.row(r) for r in columns_to_rows(row_or_columns)], self.output_columns)
        return self.row(row_or_columns)

    def rows(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Output rows for input rows; a bad row gets an ``error``, the others go on."""
        return [self.row(row) for row in rows]

    def row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """The output row for one input row; errors land in its ``error`` column."""
        from turnkit.messages import to_openai
        from turnkit.parse import load_format

        out: dict[str, Any] = dict(row) if self.keep_columns else {}
        out["message"] = None
        out["error"] = None
        try:
            if "_invalid" in row:
                raise RowError("row", str(row["_invalid"]))
            text = row.get(self.text_column)
            if not isinstance(text, str):
                raise RowError(self.text_column, f"expected the model output as a string, got {_describe(text)}")
            if self._parser is None:
                self._parser = load_format(self.format)
            out["message"] = to_openai(self._parser.parse(text))
        except TurnkitError as exc:
            out["error"] = _error_text(exc)
        except Exception as exc:  # noqa: BLE001 - one bad row never stops the run
            out["error"] = f"{type(exc).__name__}: {exc}"
        return out


def _error_text(exc: TurnkitError) -> str:
    return f"{exc.code}: {exc}"


def _is_column(values: Sequence[Any], *, text: bool = False) -> bool:
    first = values[0]
    if text:
        return isinstance(first, str) or first is None
    # a row's messages is a list of dicts; a column of them is a list of lists (or JSON strings)
    return not isinstance(first, Mapping)


def columns_to_rows(columns: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``{"a": [1, 2], "b": [3, 4]}`` -> ``[{"a": 1, "b": 3}, {"a": 2, "b": 4}]`` (numpy arrays become lists)."""
    names = list(columns)
    lists = [_to_list(columns[name]) for name in names]
    return [dict(zip(names, values, strict=True)) for values in zip(*lists, strict=True)]


def rows_to_columns(rows: Sequence[Mapping[str, Any]], extra: Sequence[str] = ()) -> dict[str, list[Any]]:
    """The inverse of :func:`columns_to_rows`; every column of any row appears (missing values are ``None``)."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    names.update(dict.fromkeys(extra))
    return {name: [row.get(name) for row in rows] for name in names}


def _to_list(value: Any) -> list[Any]:
    tolist = getattr(value, "tolist", None)
    items = tolist() if callable(tolist) else value
    return [_plain(v) for v in items]


def _plain(value: Any) -> Any:
    """numpy arrays (Ray and pyarrow hand out nested ones) into lists, recursively."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and not isinstance(value, str | bytes | int | float | bool):
        value = tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
