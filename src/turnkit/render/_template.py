"""``ChatTemplate``: a chat template compiled once and rendered many times, exactly as transformers 5.23 renders it."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from itertools import islice
from typing import Any, Literal, overload

import jinja2
import jinja2.exceptions
from jinja2.nodes import EvalContext
from jinja2.runtime import Context

from turnkit._args import expect, expect_mapping
from turnkit.errors import (
    TemplateError,
    TemplateLimitError,
    TemplateNotFoundError,
    TemplateSecurityError,
    TurnkitError,
)
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.render._budget import RenderBudget, reset_budget, set_budget
from turnkit.render._fragments import remembers_by_position
from turnkit.render._inputs import (
    REASONING_FIELDS,
    adopt,
    check_render_args,
    check_tokenize_args,
    input_size,
    plain_data,
    plain_key,
    plain_messages,
    too_deep,
    tool_schemas,
    tools_key,
)
from turnkit.render._memo import FifoMemo
from turnkit.render._sandbox import TemplateSandbox, nested_generation, sandbox_for
from turnkit.render._spans import TRACKER, marked_spans
from turnkit.render._straight import CHECK_EVERY, check_output

__all__ = ["ChatTemplate", "apply_chat_template", "render_template_string"]

_CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "
_SINGLE = "default"

Conversation = Sequence[Mapping[str, Any]]


class ChatTemplate:
    """A chat template (or a set of named ones), compiled once in the hardened sandbox.

    ``source`` is the template text, or a mapping of template names to texts (as a model folder with several
    templates has). ``special_tokens`` (``bos_token``, ``eos_token``...) are passed to every render, as a
    tokenizer passes its special tokens; keyword arguments of :meth:`render` override them. ``prefix_cache=True``
    remembers each iteration of the template's top-level loops, so a conversation that grew by a turn reruns
    only its new messages: a gain where a message's code costs more than matching it, a loss for the cheapest
    templates; a template whose message loop is remembered by position keeps no render memo (a repeated input
    replays every iteration instead). docs/render.md has figures.

    Example::

        >>> from turnkit import ChatTemplate
        >>> chatml = ChatTemplate(
        ...     "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}<|im_end|>\\n{% endfor %}"
        ...     "{% if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}"
        ... )
        >>> chatml.render([{"role": "user", "content": "Hi!"}], add_generation_prompt=True)
        '<|im_start|>user\\nHi!<|im_end|>\\n<|im_start|>assistant\\n'
    """

    __slots__ = (
        "_sources",
        "_compiled",
        "_single",
        "_special",
        "limits",
        "_sandbox",
        "_plain_special",
        "_parent",
        "_tokenizer",
        "_memos",
    )

    def __init__(
        self,
        source: str | Mapping[str, str],
        *,
        special_tokens: Mapping[str, Any] | None = None,
        limits: Limits | None = None,
        tokenizer: Any = None,
        prefix_cache: bool = False,
    ) -> None:
        expect(source, (str, Mapping), name="source", func="ChatTemplate", accepts="str or a mapping of names to str")
        expect(prefix_cache, bool, name="prefix_cache", func="ChatTemplate")
        expect_mapping(special_tokens, name="special_tokens", func="ChatTemplate", none=True)
        expect(limits, Limits, name="limits", func="ChatTemplate", none=True)
        self.limits = limits or DEFAULT_LIMITS
        # a tokenizer.json path, model folder, tokenizers.Tokenizer or ChatTokenizer; loaded on first tokenize=True
        self._tokenizer: Any = tokenizer
        self._sandbox: TemplateSandbox = sandbox_for(self.limits, fragments=prefix_cache)
        self._special: dict[str, Any] = dict(special_tokens or {})
        self._plain_special: dict[str, Any] = _plain(self._special)
        # what _render_chat merges for a render without extra variables, the render's own slots left to fill: a
        # copy of a finished dict costs less than the merge (the globals never change once the sandbox is built)
        self._parent: dict[str, Any] = {**self._sandbox.globals, **self._plain_special, **_RENDER_SLOTS}
        self._compiled: dict[str, jinja2.Template | TemplateError] = {}
        # per template name: the memo of rendered prompts (None: the template's output is not a function of its
        # input, e.g. it reads the clock); see _render_memo
        self._memos: dict[str, FifoMemo[str] | None] = {}
        if isinstance(source, str):
            self._single = True
            self._sources: dict[str, str] = {_SINGLE: source}
            compiled = self._compile(_SINGLE)
            if isinstance(compiled, TemplateError):
                raise TemplateError(compiled.message, code=compiled.code)
        elif isinstance(source, Mapping):
            self._single = False
            self._sources = {}
            for name, text in source.items():
                if not isinstance(name, str) or not isinstance(text, str):
                    raise TemplateError(
                        f"named chat templates must map names to template strings, got {name!r}: {type(text).__name__}",
                        code="template_input",
                    )
                self._sources[name] = text
        else:
            raise TemplateError(
                f"a chat template is a string or a mapping of names to strings, got {type(source).__name__}",
                code="template_input",
            )

    # -- construction -------------------------------------------------------------------------------------

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str], *, limits: Limits | None = None) -> ChatTemplate:
        """The chat template(s) and special tokens of a local Hugging Face model folder (never downloads)."""
        from turnkit.render._model_folder import read_model_folder

        folder = read_model_folder(path, limits=limits)
        if folder.chat_template is None:
            raise TemplateNotFoundError(f"the model folder {os.fspath(path)!r} has no chat template")
        tokenizer = path if os.path.isfile(os.path.join(path, "tokenizer.json")) else None
        return cls(folder.chat_template, special_tokens=folder.template_kwargs, limits=limits, tokenizer=tokenizer)

    def save_pretrained(self, path: str | os.PathLike[str]) -> None:
        """Write the template(s) and special tokens to a model folder the way transformers saves them."""
        from turnkit.render._model_folder import write_model_folder

        write_model_folder(path, chat_template=self.source, template_kwargs=self.special_tokens)

    @property
    def special_tokens(self) -> dict[str, Any]:
        """The special tokens (and other variables) passed to every render; render keywords override them."""
        return dict(self._special)

    @property
    def tokenizer(self) -> Any:
        """The :class:`~turnkit.render.ChatTokenizer` ``tokenize=True`` uses (loaded now if needed), or ``None``."""
        if self._tokenizer is None:
            return None
        from turnkit.render._tokenize import ChatTokenizer

        if not isinstance(self._tokenizer, ChatTokenizer):
            self._tokenizer = ChatTokenizer.load(self._tokenizer, special_tokens=self._special)
        return self._tokenizer

    @property
    def source(self) -> str | dict[str, str]:
        """The template text, or the mapping of names to texts."""
        return self._sources[_SINGLE] if self._single else dict(self._sources)

    @property
    def names(self) -> list[str]:
        """The template names (``["default"]`` for a single template)."""
        return list(self._sources)

    def __repr__(self) -> str:
        return f"ChatTemplate(names={self.names!r})"

    # -- rendering ----------------------------------------------------------------------------------------

    @overload
    def render(
        self,
        conversation: Conversation,
        *,
        tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = ...,
        documents: Sequence[Mapping[str, Any]] | None = ...,
        add_generation_prompt: bool = ...,
        continue_final_message: bool | str = ...,
        template_name: str | None = ...,
        tokenize: Literal[False] = ...,
        **kwargs: Any,
    ) -> str: ...

    @overload
    def render(
        self,
        conversation: Sequence[Conversation],
        *,
        tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = ...,
        documents: Sequence[Mapping[str, Any]] | None = ...,
        add_generation_prompt: bool = ...,
        continue_final_message: bool | str = ...,
        template_name: str | None = ...,
        tokenize: Literal[False] = ...,
        **kwargs: Any,
    ) -> list[str]: ...

    @overload
    def render(
        self,
        conversation: Conversation | Sequence[Conversation],
        *,
        tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = ...,
        documents: Sequence[Mapping[str, Any]] | None = ...,
        add_generation_prompt: bool = ...,
        continue_final_message: bool | str = ...,
        template_name: str | None = ...,
        tokenize: bool = ...,
        tokenizer: Any = ...,
        return_dict: bool = ...,
        return_assistant_tokens_mask: bool = ...,
        return_tensors: str | None = ...,
        padding: bool | str = ...,
        truncation: bool | str = ...,
        max_length: int | None = ...,
        add_special_tokens: bool = ...,
        **kwargs: Any,
    ) -> Any: ...

    def render(
        self,
        conversation: Conversation | Sequence[Conversation],
        *,
        tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = None,
        documents: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        template_name: str | None = None,
        tokenize: bool = False,
        tokenizer: Any = None,
        return_dict: bool = True,
        return_assistant_tokens_mask: bool = False,
        return_tensors: str | None = None,
        padding: bool | str = False,
        truncation: bool | str = False,
        max_length: int | None = None,
        add_special_tokens: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Render a conversation (or a list of conversations) into the prompt text, or its tokens.

        Identical to transformers' ``tokenizer.apply_chat_template(..., tokenize=False)``; where it fails, this
        raises a :class:`~turnkit.TemplateError`. With ``tokenize=True`` it returns what transformers 5.23 returns
        with ``tokenize=True``: the token ids, or (``return_dict=True``) a dict of ``input_ids``,
        ``attention_mask`` and, with ``return_assistant_tokens_mask=True``, ``assistant_masks``.
        """
        check_render_args(
            "ChatTemplate.render",
            conversation,
            tools,
            documents,
            add_generation_prompt,
            continue_final_message,
            template_name,
            tokenize,
        )
        if not (
            return_dict is True
            and return_assistant_tokens_mask is False
            and return_tensors is None
            and padding is False
            and truncation is False
            and max_length is None
            and add_special_tokens is False
        ):  # (the defaults, every render without tokenize=True, need no checks: no call for them)
            check_tokenize_args(
                "ChatTemplate.render",
                return_dict,
                return_assistant_tokens_mask,
                return_tensors,
                padding,
                truncation,
                max_length,
                add_special_tokens,
            )
        if tokenize:
            from turnkit.render._tokenize import tokenize_chat

            def text() -> Any:
                return self.render(
                    conversation,
                    tools=tools,
                    documents=documents,
                    add_generation_prompt=add_generation_prompt,
                    continue_final_message=continue_final_message,
                    template_name=template_name,
                    **kwargs,
                )

            return tokenize_chat(
                self,
                conversation,
                tokenizer=tokenizer,
                render=text,
                return_dict=return_dict,
                return_assistant_tokens_mask=return_assistant_tokens_mask,
                return_tensors=return_tensors,
                padding=padding,
                truncation=truncation,
                max_length=max_length,
                add_special_tokens=add_special_tokens,
                continue_final_message=continue_final_message,
            )
        if return_assistant_tokens_mask:
            raise TemplateError(
                "return_assistant_tokens_mask=True requires tokenize=True and return_dict=True", code="template_input"
            )
        # (the usual case without a call: a single template, already compiled)
        name = _SINGLE if template_name is None and self._single else self._choose(template_name, tools)
        source = self._sources[name]
        first = None
        if isinstance(conversation, _SEQUENCE):
            if not conversation:
                raise TemplateError(
                    "cannot render an empty conversation: give at least one message", code="template_input"
                )
            first = conversation[0]
        batched = (
            first is not None
            and type(first) is not dict
            and (isinstance(first, _SEQUENCE) or hasattr(first, "messages"))
        )
        if continue_final_message and add_generation_prompt:
            raise TemplateError(
                "continue_final_message and add_generation_prompt cannot be used together: continue the final "
                "message, or add a header that starts a new assistant message",
                code="template_input",
            )
        compiled = self._compiled.get(name) or self._compile(name)
        if isinstance(compiled, TemplateError):
            raise TemplateError(compiled.message, code=compiled.code)  # a fresh error per render
        memo = self._memos.get(name, _UNKNOWN)
        if memo is _UNKNOWN:
            # a loop remembered by position replays a repeat's every iteration already: the memo's fingerprint,
            # paid by every render, would cost more than it saves (see docs/render.md, prefix reuse)
            memo = self._memos[name] = (
                _render_memo() if _deterministic(source) and not remembers_by_position(compiled) else None
            )
        trusted: set[int] = set()
        schemas = tool_schemas(tools, trusted)
        key = None
        if memo is not None and not batched and TRACKER.get() is None and memo.seen(_fingerprint(conversation)):
            key = _memo_key(
                name, conversation, tools_key(schemas), documents, add_generation_prompt, continue_final_message, kwargs
            )
            if key is not None:
                hit = memo.get(key)
                if hit is not None:
                    return hit
        if documents is not None:
            for document in documents:
                if not isinstance(document, dict):
                    raise TemplateError(
                        "documents must be a list of dicts (with 'title' and 'text' keys)", code="template_input"
                    )
        shared: dict[str, Any] = {
            "tools": schemas,
            "documents": documents if documents is None or adopt(documents, trusted) else _plain(documents, trusted),
            "add_generation_prompt": add_generation_prompt,
        }
        extra = self._plain_special if not kwargs else _plain({**self._special, **kwargs}, trusted)
        if "messages" in extra:
            raise TemplateError("'messages' cannot be passed as an extra template variable", code="template_input")
        # continue_final_message edits the final message, so it needs a copy of the caller's messages
        copy = bool(continue_final_message)
        if batched:
            chats = [plain_messages(chat, trusted, copy=copy) for chat in conversation]
            return [
                self._render_chat(compiled, source, chat, shared, extra, continue_final_message, trusted)
                for chat in chats
            ]
        chat = plain_messages(conversation, trusted, copy=copy)
        prompt = self._render_chat(compiled, source, chat, shared, extra, continue_final_message, trusted)
        if key is not None and memo is not None:
            memo.put(key, prompt, prompt)
        return prompt

    def _choose(self, template_name: str | None, tools: Any) -> str:
        if self._single:
            if template_name is not None and template_name != _SINGLE:
                raise TemplateNotFoundError(
                    f"no chat template named {template_name!r}: this is a single template", code="template_not_found"
                )
            return _SINGLE
        if template_name is not None:
            if template_name in self._sources:
                return template_name
            raise TemplateNotFoundError(f"no chat template named {template_name!r}; available: {sorted(self._sources)}")
        if tools is not None and "tool_use" in self._sources:
            return "tool_use"
        if _SINGLE in self._sources:
            return _SINGLE
        raise TemplateNotFoundError(
            "this model has several chat templates and none is named 'default': pass template_name= one of "
            f"{sorted(self._sources)}"
        )

    def _nested_generation(self, compiled: jinja2.Template, source: str) -> bool:
        """Whether ``compiled`` has a generation block inside a buffer (parsed once, when masks are asked for)."""
        nested: bool | None = getattr(compiled, "turnkit_nested_generation", None)
        if nested is None:
            nested = nested_generation(self._sandbox.parse(source))
            compiled.turnkit_nested_generation = nested  # type: ignore[attr-defined]
        return nested

    def _compile(self, name: str) -> jinja2.Template | TemplateError:
        compiled = self._compiled.get(name)
        if compiled is None:
            try:
                source = self._sources[name]
                compiled = _prepared(self._sandbox.from_string(source), source)
            except jinja2.exceptions.TemplateSyntaxError as exc:
                compiled = TemplateError(
                    f"chat template {name!r} does not compile: {exc.message} (line {exc.lineno})",
                    code="template_syntax",
                )
            except TurnkitError as exc:
                compiled = TemplateError(f"chat template {name!r} does not compile: {exc}", code="template_syntax")
            except Exception as exc:  # noqa: BLE001 - e.g. RecursionError on absurdly nested expressions
                compiled = TemplateError(
                    f"chat template {name!r} does not compile: {type(exc).__name__}: {exc}", code="template_syntax"
                )
            self._compiled[name] = compiled
        return compiled

    def _render_chat(
        self,
        compiled: jinja2.Template,
        source: str,
        messages: list[dict[str, Any]],
        shared: dict[str, Any],
        extra: dict[str, Any],
        continue_final_message: bool | str,
        trusted: set[int],
    ) -> str:
        final_message: Any = None
        if continue_final_message:
            final_message = _tag_final_message(messages, source, continue_final_message)
        # the context's variables: the sandbox's globals and the render's in one merge (see _run_in)
        if extra is self._plain_special:
            parent = self._parent.copy()
            parent["messages"] = messages
            parent.update(shared)
        else:
            parent = {**self._sandbox.globals, **extra, "messages": messages, **shared}
        pieces = (extra, messages, shared)
        text = _run_in(self._sandbox, compiled, parent, trusted, _chat_input_size, pieces)
        tracker = TRACKER.get()
        if tracker is not None and self._nested_generation(compiled, source):
            # generation blocks inside macros or {% set %} blocks: where their text lands (see _spans)
            tracker.marking = True
            try:
                marked = _run_in(self._sandbox, compiled, dict(parent), trusted, _chat_input_size, pieces)
            finally:
                tracker.marking = False
            tracker.renders.pop()
            spans = marked_spans(marked, text)
            if spans is not None:
                tracker.renders[-1] = spans
        if continue_final_message:
            text = _cut_at_final_message(text, final_message)
        return text


_UNKNOWN: Any = object()
# the variables every chat render sets, in the order _render_chat sets them (``shared`` holds the last three)
_RENDER_SLOTS = dict.fromkeys(("messages", "tools", "documents", "add_generation_prompt"))
_SEQUENCE = (list, tuple)  # a tuple of types: ``list | tuple`` would build a union object on every render
# What makes a render's output change from one call to the next (the clock, the random generators) or depend
# on more than the input's content (``is sameas`` tests identity). A template whose text mentions one (even in
# a comment or a string: the test is conservative) is never memoised.
_IMPURE = ("strftime_now", "lipsum", "random", "sameas")


def _deterministic(source: str) -> bool:
    """Whether the template's output is a function of its variables alone (no clock, no randomness)."""
    return not any(word in source for word in _IMPURE)


def _fingerprint(conversation: Any) -> int:
    """A cheap function of a conversation's content (equal conversations, equal numbers): its length and its last
    message's text. Anything else (tools, options) only makes more inputs share a number, which costs a key."""
    if type(conversation) is not list or not conversation:
        return 0
    last = conversation[-1]
    content = last.get("content") if type(last) is dict else None
    return hash((len(conversation), content if type(content) is str else None))


def _memo_key(
    name: str,
    conversation: Any,
    tools: Any,
    documents: Any,
    add_generation_prompt: bool,
    continue_final_message: bool | str,
    kwargs: dict[str, Any],
) -> bytes | None:
    """The exact content of one render's input as bytes, or None when some of it is not plain data.

    Pickled by ``PlainPickler``, which takes only exact built-in types (a str subclass, a Mapping, a
    dataclass, a function make it refuse), keeps dict order and float bits, and writes a back-reference for an
    object met twice: equal bytes mean inputs of the same types, values, order and sharing, so the template sees
    the same data. ``tools`` is what :func:`tools_key` gives for the render's tool schemas.
    """
    if len(kwargs) > _MEMO_MAX_KWARGS:
        return None
    return plain_key(
        (name, conversation, tools, documents, add_generation_prompt, continue_final_message, kwargs), _MEMO_MAX_KEY
    )


_MEMO_MAX_KWARGS = 64
_MEMO_MAX_KEY = 1 << 20  # a bigger input is rendered every time (a miss would cost more memory than it saves)
_MEMO_MAX_TEXT = 1 << 20
_MEMO_ENTRIES = 256
_MEMO_BYTES = 16 << 20


def _render_memo() -> FifoMemo[str]:
    """Prompts already rendered by one template, keyed by the exact content of their input (FIFO, bounded).

    A render is a function of its input when the template reads no clock and no randomness (checked once per
    template): the immutable sandbox lets it mutate nothing it is given, and what it sees is rebuilt
    deterministically from that input. So re-rendering an unchanged conversation (a retry, a second tokenizer
    pass, a server re-rendering the same history) returns the text already built. Failed renders are not kept.
    """
    return FifoMemo(max_entries=_MEMO_ENTRIES, max_bytes=_MEMO_BYTES, max_text=_MEMO_MAX_TEXT)


def _plain(value: Any, trusted: set[int] | None = None) -> Any:
    try:
        return plain_data(value, trusted)
    except RecursionError as exc:
        raise too_deep() from exc


def _tag_final_message(chat: list[dict[str, Any]], source: str, continue_final_message: bool | str) -> Any:
    """Mark the end of the final message so the rendered text can be cut there (transformers' method)."""
    if not chat:
        raise TemplateError("continue_final_message is set but the conversation is empty", code="template_input")
    field = continue_final_message if isinstance(continue_final_message, str) else "content"
    final_message = chat[-1].get(field)
    if final_message is None:
        raise TemplateError(
            f"continue_final_message is set but the final message has no {field!r} to continue",
            code="template_input",
        )
    fields = [field]
    if field in REASONING_FIELDS:
        fields = [name for name in REASONING_FIELDS if chat[-1].get(name) == final_message]
    if not any(name in source for name in fields):
        raise TemplateError(
            f"continue_final_message is set to {field!r} but the chat template never mentions that field",
            code="template_input",
        )
    try:
        if isinstance(final_message, list | tuple):
            for block in reversed(final_message):
                if "text" in block:
                    final_message = block["text"]
                    block["text"] = block["text"] + _CONTINUE_TAG
                    break
            else:
                raise TemplateError(
                    "continue_final_message is set but the final message has no text block to continue",
                    code="template_input",
                )
        else:
            for name in fields:
                chat[-1][name] = chat[-1][name] + _CONTINUE_TAG
    except (TypeError, KeyError, IndexError) as exc:
        raise TemplateError(
            f"continue_final_message is set but the final message's {field!r} is not text: {exc}",
            code="template_input",
        ) from exc
    return final_message


def _cut_at_final_message(text: str, final_message: Any) -> str:
    if not isinstance(final_message, str):
        raise TemplateError("continue_final_message is set but the final message is not text", code="template_input")
    tag = _CONTINUE_TAG.strip()
    if final_message.strip() not in text or tag not in text:
        raise TemplateError(
            "continue_final_message is set but the final message does not appear in the rendered chat: the "
            "template drops part of it",
            code="template_continue",
        )
    at = text.rindex(tag)
    if text[at : at + len(_CONTINUE_TAG)] == _CONTINUE_TAG:
        return text[:at]
    return text[:at].rstrip()


def _run(
    sandbox: TemplateSandbox, compiled: jinja2.Template, variables: dict[str, Any], trusted: set[int] | None = None
) -> str:
    """Render with a fresh budget, stopping at the output cap; jinja2 and Python errors become turnkit errors."""
    return _run_in(sandbox, compiled, {**sandbox.globals, **variables}, trusted, input_size, variables)


def _chat_input_size(pieces: tuple[dict[str, Any], list[Any], dict[str, Any]]) -> int:
    """The input size of a chat render's variables, given as (extra variables, messages, shared variables)."""
    extra, messages, shared = pieces
    return input_size({**extra, "messages": messages, **shared})


def _run_in(
    sandbox: TemplateSandbox,
    compiled: jinja2.Template,
    parent: dict[str, Any],
    trusted: set[int] | None,
    measure: Callable[[Any], int],
    inputs: Any,
) -> str:
    """:func:`_run` with the context's variables already merged with the sandbox's globals (``parent``, which the
    render owns), the render's input measured as ``measure(inputs)`` when a limit first needs its size."""
    budget = RenderBudget(sandbox.limits, trusted, measure, inputs)
    token = set_budget(budget)
    try:
        eval_ctx = getattr(compiled, "turnkit_eval_ctx", None) or EvalContext(sandbox, compiled.name)
        context = _RenderContext(sandbox, parent, compiled.name, compiled.blocks, eval_ctx)
        tracker = TRACKER.get()
        if tracker is not None:
            tracker.start_render()
        chunks: Any = compiled.root_render_func(context)  # an iterator, or a list (see _straight)
        if type(chunks) is list:
            # a template compiled to straight Python ran to its end, measuring its output as it grew (_straight)
            total = sum(map(len, chunks))
            check_output(sandbox, total)
            if tracker is not None:
                tracker.length = total
            budget.check_time()
            return "".join(chunks)
        parts: list[str] = []
        total = 0
        # Consume the output a few chunks at a time (at C speed), checking the cap between batches. A batch only
        # holds references: every big string in it was already counted when the template built it. Tracking
        # ``{% generation %}`` spans takes one chunk at a time, so each block sees the length before it.
        step = CHECK_EVERY if tracker is None else 1  # a short conversation's prompt comes in one batch
        while batch := list(islice(chunks, step)):
            total += sum(map(len, batch))
            check_output(sandbox, total)
            parts += batch
            if tracker is not None:
                tracker.length = total
            if len(batch) == step:  # more may come (a shorter batch was the last: the check below follows it)
                budget.check_time()
        budget.check_time()
        return "".join(parts)
    except TurnkitError as exc:
        where = _template_line(compiled, exc)
        if where:
            exc.message += where
            exc.args = (exc.message,)
        raise
    except jinja2.exceptions.SecurityError as exc:
        where = _template_line(compiled, exc)
        raise TemplateSecurityError(f"chat template tried an unsafe operation: {exc}{where}") from exc
    except jinja2.exceptions.TemplateSyntaxError as exc:
        raise TemplateError(f"chat template error: {exc.message} (line {exc.lineno})", code="template_syntax") from exc
    except jinja2.exceptions.UndefinedError as exc:
        where = _template_line(compiled, exc)
        raise TemplateError(f"chat template error: {exc}{where}", code="template_undefined") from exc
    except jinja2.exceptions.TemplateError as exc:
        # raise_exception(...) from the template: its message is meant for the caller, keep it as it is.
        raise TemplateError(str(exc.message if exc.message is not None else exc), code="template_raised") from exc
    except (RecursionError, MemoryError) as exc:
        raise TemplateLimitError(f"chat template ran out of resources ({type(exc).__name__})") from exc
    except Exception as exc:  # noqa: BLE001 - any Python error inside the template is a template error
        where = _template_line(compiled, exc)
        raise TemplateError(
            f"chat template failed: {type(exc).__name__}: {exc}{where}", code="template_runtime"
        ) from exc
    finally:
        reset_budget(token)


_NO_NAMES: frozenset[str] = frozenset()


class _RenderContext(Context):
    """The context ``Template.new_context`` builds for a render, minus the steps that do nothing here.

    jinja2's ``__init__`` also copies the globals' key set (only ``{% import %}`` reads it, and there is no loader
    to import from), builds the block map by a comprehension when there are no blocks, and builds an evaluation
    context per render: here the template's own one (see :func:`_prepared`) where nothing can change it.
    """

    def __init__(
        self,
        environment: jinja2.Environment,
        parent: dict[str, Any],
        name: str | None,
        blocks: dict[str, Any],
        eval_ctx: EvalContext,
    ) -> None:
        self.parent = parent
        self.vars = {}
        self.environment = environment
        self.eval_ctx = eval_ctx
        # (read only when another template imports this one, which the sandbox cannot do: no loader)
        self.exported_vars = _NO_NAMES  # type: ignore[assignment]
        self.name = name
        self.globals_keys = _NO_NAMES  # type: ignore[assignment]
        self.blocks = {k: [v] for k, v in blocks.items()} if blocks else {}


def _prepared(compiled: jinja2.Template, source: str) -> jinja2.Template:
    """``compiled`` with the evaluation context its renders share, when it has no ``{% autoescape %}`` block (the
    only code that writes one; the test is on the text, so it is conservative). Others get a fresh one per render.
    """
    if "autoescape" not in source:
        compiled.turnkit_eval_ctx = EvalContext(compiled.environment, compiled.name)  # type: ignore[attr-defined]
    return compiled


def _template_line(compiled: jinja2.Template, exc: BaseException) -> str:
    """`` (template line N)`` for the innermost template frame of the traceback, or ``""``."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = compiled.get_corresponding_lineno(tb.tb_lineno)
        tb = tb.tb_next
    return f" (template line {line})" if line is not None else ""


def render_template_string(source: str, variables: Mapping[str, Any], *, limits: Limits | None = None) -> str:
    """Render any Jinja template text with raw variables in the chat-template sandbox (no chat normalisation)."""
    sandbox = sandbox_for(limits or DEFAULT_LIMITS)
    try:
        compiled = _prepared(sandbox.from_string(source), source)
    except jinja2.exceptions.TemplateSyntaxError as exc:
        raise TemplateError(
            f"template does not compile: {exc.message} (line {exc.lineno})", code="template_syntax"
        ) from exc
    except Exception as exc:  # noqa: BLE001 - e.g. RecursionError on absurdly nested expressions
        raise TemplateError(f"template does not compile: {type(exc).__name__}: {exc}", code="template_syntax") from exc
    return _run(sandbox, compiled, dict(variables))


_CACHE: OrderedDict[tuple[Any, Limits], ChatTemplate] = OrderedDict()
_CACHE_SIZE = 64


def _cached(source: str | Mapping[str, str], limits: Limits) -> ChatTemplate:
    key: tuple[Any, Limits] = (
        (source if isinstance(source, str) else tuple(sorted(source.items()))),
        limits,
    )
    template = _CACHE.get(key)
    if template is None:
        template = ChatTemplate(source, limits=limits)
        _CACHE[key] = template
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return template


@overload
def apply_chat_template(
    conversation: Conversation,
    chat_template: str | Mapping[str, str] | ChatTemplate,
    *,
    tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = ...,
    documents: Sequence[Mapping[str, Any]] | None = ...,
    add_generation_prompt: bool = ...,
    continue_final_message: bool | str = ...,
    template_name: str | None = ...,
    limits: Limits | None = ...,
    tokenize: Literal[False] = ...,
    **kwargs: Any,
) -> str: ...


@overload
def apply_chat_template(
    conversation: Sequence[Conversation],
    chat_template: str | Mapping[str, str] | ChatTemplate,
    *,
    tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = ...,
    documents: Sequence[Mapping[str, Any]] | None = ...,
    add_generation_prompt: bool = ...,
    continue_final_message: bool | str = ...,
    template_name: str | None = ...,
    limits: Limits | None = ...,
    tokenize: Literal[False] = ...,
    **kwargs: Any,
) -> list[str]: ...


@overload
def apply_chat_template(
    conversation: Conversation | Sequence[Conversation],
    chat_template: str | Mapping[str, str] | ChatTemplate,
    *,
    tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = ...,
    documents: Sequence[Mapping[str, Any]] | None = ...,
    add_generation_prompt: bool = ...,
    continue_final_message: bool | str = ...,
    template_name: str | None = ...,
    limits: Limits | None = ...,
    tokenize: bool = ...,
    tokenizer: Any = ...,
    return_dict: bool = ...,
    return_assistant_tokens_mask: bool = ...,
    return_tensors: str | None = ...,
    padding: bool | str = ...,
    truncation: bool | str = ...,
    max_length: int | None = ...,
    add_special_tokens: bool = ...,
    **kwargs: Any,
) -> Any: ...


def apply_chat_template(
    conversation: Conversation | Sequence[Conversation],
    chat_template: str | Mapping[str, str] | ChatTemplate,
    *,
    tools: Sequence[Mapping[str, Any] | Callable[..., Any]] | None = None,
    documents: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = False,
    continue_final_message: bool | str = False,
    template_name: str | None = None,
    limits: Limits | None = None,
    tokenize: bool = False,
    **kwargs: Any,
) -> Any:
    """Render ``conversation`` with ``chat_template``: the text transformers' ``apply_chat_template`` gives.

    Special tokens go in as keyword arguments (``bos_token="<s>"``), like any other template variable. Template
    texts are compiled once and cached. A list of conversations gives a list of strings. ``tokenize=True`` (with
    ``tokenizer=`` a ``tokenizer.json`` path, a model folder or a ``tokenizers.Tokenizer``) gives token ids or,
    with ``return_dict=True``, ``input_ids``/``attention_mask``/``assistant_masks`` as transformers 5.23 does.

    Example::

        >>> from turnkit import apply_chat_template
        >>> apply_chat_template(
        ...     [{"role": "user", "content": "Hi!"}],
        ...     "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}\\n{% endfor %}",
        ...     bos_token="<s>",
        ... )
        '<s>[user] Hi!\\n'
    """
    check_render_args(
        "apply_chat_template",
        conversation,
        tools,
        documents,
        add_generation_prompt,
        continue_final_message,
        template_name,
        tokenize,
    )
    expect(
        chat_template,
        (str, Mapping, ChatTemplate),
        name="chat_template",
        func="apply_chat_template",
        accepts="str, a mapping of names to str or a ChatTemplate",
    )
    expect(limits, Limits, name="limits", func="apply_chat_template", none=True)
    template = (
        chat_template if isinstance(chat_template, ChatTemplate) else _cached(chat_template, limits or DEFAULT_LIMITS)
    )
    return template.render(
        conversation,
        tools=tools,
        documents=documents,
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final_message,
        template_name=template_name,
        tokenize=tokenize,
        **kwargs,
    )
