"""The vocabulary of a format declaration: regions, markers and argument encodings, as plain data.

A built-in format is one :class:`FormatSpec` value in ``turnkit/parse/builtin/<name>.py``. The
engine (``_engine.py``) interprets it; nothing here runs on model output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from turnkit._args import check_fields

__all__ = [
    "BodySpec",
    "FormatSpec",
    "Harmony",
    "JsonArgs",
    "JsonCalls",
    "KeyedDict",
    "Pythonic",
    "Reasoning",
    "Section",
    "ToolRegion",
    "XmlParams",
]


@dataclass(frozen=True)
class Reasoning:
    """A reasoning region: text between ``starts`` and ``ends`` becomes ``reasoning_content``.

    ``open_by_default``: without a ``prefix``, output is assumed to begin inside reasoning (the
    format's generation prompt ends with the opening marker). With a ``prefix``, the prompt decides.
    """

    starts: tuple[str, ...] = ("<think>",)
    ends: tuple[str, ...] = ("</think>",)
    open_by_default: bool = False
    ends_kept: tuple[str, ...] = ()
    """Markers that end reasoning but are themselves the start of the content (a tool call opened without
    closing the thinking block)."""
    implicit_needs_end: bool = False
    """A block the output starts in (opened by the prompt or ``open_by_default``) is reasoning only when an
    end marker follows: its text is held back until that marker (then reasoning) or until the output ends
    or another region starts (then content). An opening marker written at the very start opens an
    ordinary (explicit) block. vLLM's non-streaming reading of some reasoning parsers (Gemma 4)."""
    needs_end: bool = False
    """Every block, explicit ones included, is reasoning only when an end marker follows (held back as
    above; released as content with its opening marker as written). vLLM's non-streaming GLM-4.5 reading."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class JsonArgs:
    """Body = ``NAME`` up to one of ``name_ends``, then the JSON arguments object.

    ``name_prefix`` is dropped from the name (``functions.``); ``id_from_name`` keeps the raw name text as
    the call id and cuts the name at ``name_cut`` (Kimi's ``functions.NAME:0``). ``fence`` allows the
    arguments inside a Markdown code fence.
    """

    name_ends: tuple[str, ...]
    name_prefix: str = ""
    name_cut: str | None = None
    id_from_name: bool = False
    id_marker: str | None = None
    """Marker after the name that introduces a call id, ended by ``id_end`` (Mistral ``[CALL_ID]``)."""
    id_end: str | None = None
    fence: bool = False
    name_ends_kept: tuple[str, ...] = ()
    """Markers that end the name but start the arguments (Mistral ``NAME{...}``)."""
    content_name: str | None = None
    """A name that means "plain text follows" rather than a call (functionary v3.2 ``all``)."""
    raw_args: tuple[tuple[str, str], ...] = ()
    """Tools whose arguments may be raw text instead of JSON: ``(tool name, argument key)`` — functionary
    v3.2 writes ``python`` followed by the code itself; it becomes ``{"code": "..."}``, streamed."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class JsonCalls:
    """Body = a JSON object ``{"name": ..., "arguments": {...}}`` or an array of them.

    ``name_is_key``: objects look like ``{"NAME": {arguments}}`` (Apertus). ``arguments`` given as a JSON
    string holding JSON are decoded.
    """

    name_keys: tuple[str, ...] = ("name",)
    args_keys: tuple[str, ...] = ("arguments", "parameters")
    id_keys: tuple[str, ...] = ("id",)
    name_is_key: bool = False
    fence: bool = False
    """The value may be wrapped in a Markdown code fence (```` ```json ... ``` ````)."""
    repeat: bool = False
    """Several objects may follow each other (separated by whitespace) inside one region."""
    envelope_keys: tuple[str, ...] = ()
    """Keys of an outer object whose value is a call or a list of calls (llama.cpp ``generic``)."""
    content_keys: tuple[str, ...] = ()
    """Keys of an outer object whose string value is the message content (``{"response": "..."}``)."""
    wrap_tags: tuple[str, ...] = ()
    """XML-ish tags that may wrap the JSON inside the region (``<response>{...}</response>``)."""
    require_args: bool = False
    """An object is a call only once it has an arguments key (a bare ``{"name": ...}`` stays text)."""
    defer: bool = False
    """Start a call only when its object is complete, so an ``id`` written after the arguments is used."""
    or_named: JsonArgs | None = None
    """When the body does not start with ``{`` or ``[``, read it as this ``NAME{args}`` encoding instead."""
    separators: str = ""
    """Characters that frame a call from what follows it (Llama 3's ``;`` between calls): one of them right
    after a call, with the whitespace around it, is dropped — never content."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class XmlParams:
    """Body = a function with XML-style parameters whose raw text values are typed by the tool schema.

    qwen3-coder: ``<function=NAME><parameter=K>V</parameter></function>``; GLM: ``NAME<arg_key>K</arg_key>
    <arg_value>V</arg_value>``. ``key_ends`` maps each marker that ends a key to the value type it
    declares (``"string"``, ``"json"`` or ``""`` = ask the schema).
    """

    function_open: str | None
    name_ends: tuple[str, ...]
    param_open: str
    key_ends: tuple[tuple[str, str], ...]
    param_close: str
    function_close: str | None
    value_open: str | None = None
    trim: str = "space"
    """How a raw value is trimmed: ``"space"`` (all surrounding whitespace) or ``"newline"`` (one newline on
    each side, as Seed-OSS writes values)."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class Pythonic:
    """Body = Python call syntax ``[f(a=1, b="x"), g()]`` (or one bare ``f(...)`` when ``bracketed`` is off).

    ``name_suffix`` is cut from the name (Llama 3.1 builtin ``python.call(...)``).
    """

    bracketed: bool = True
    name_suffix: str = ""
    many: bool = False
    """Without brackets: further calls may follow, separated by whitespace (OLMo 3)."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class KeyedDict:
    """Body = ``call:NAME{key:value,...}`` with bare keys and strings quoted by ``quote`` (Gemma 4)."""

    name_prefix: str
    quote: str

    def __post_init__(self) -> None:
        check_fields(self)


BodySpec = JsonCalls | JsonArgs | XmlParams | Pythonic | KeyedDict
"""The argument encodings a tool region's body may be declared in (one decoder each in ``_bodies/``)."""


@dataclass(frozen=True)
class ToolRegion:
    """A tool-call region: ``open`` marker, a body in one argument encoding, optional ``close`` marker.

    ``keep_open``: the open marker is the start of the body itself (bare ``{"name"`` JSON).
    ``at_start``: recognised only at the start of the output (after whitespace).
    """

    open: str
    body: BodySpec
    close: str | None = None
    keep_open: bool = False
    at_start: bool = False

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class Section:
    """Markers around a group of tool regions; text between the calls is ignored."""

    open: str
    close: str | None
    calls: tuple[ToolRegion, ...]

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class Harmony:
    """Header-routed messages (OpenAI harmony): ``<|start|>ROLE<|channel|>CH to=R<|message|>BODY<|end|>``.

    The header decides the region: a recipient starting with ``recipient_prefix`` is a tool call whose
    body is JSON arguments, a channel in ``reasoning_channels`` is reasoning, anything else content.
    """

    header_opens: tuple[str, ...]
    message: str
    ends: tuple[str, ...]
    reasoning_channels: tuple[str, ...]
    recipient_prefix: str
    starts_in_header_after: str
    """A prompt ending with this text means the output begins inside a header."""
    header_starts: tuple[str, ...] = ()
    """Header text that, at the very start of the output, means it continues the prompt's header."""
    self_recipients: tuple[str, ...] = ()
    """Recipients that address the assistant itself: treated as no recipient."""
    channel: str | None = None
    """The header marker followed by the channel name (``<|channel|>``); ``None``: headers name no channel."""
    recipient: str = "to="
    """What introduces the recipient in a header (``to=functions.NAME``)."""

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class FormatSpec:
    """One model output format: its regions and markers, as data."""

    name: str
    description: str
    aliases: tuple[str, ...] = ()
    reasoning: tuple[Reasoning, ...] = ()
    tools: tuple[ToolRegion, ...] = ()
    sections: tuple[Section, ...] = ()
    harmony: Harmony | None = None
    discard: tuple[str, ...] = ()
    """Markers dropped from content (``<|START_RESPONSE|>``)."""
    ends: tuple[str, ...] = ()
    """End-of-message markers: everything after them is ignored."""
    prompt_markers: tuple[str, ...] = ()
    """Markers the family's chat templates write around the tool list or the tool results (LFM2's
    ``List of tools:``, ``<|tool_response_start|>``). The model does not emit them, so parsing ignores them;
    format detection takes them as evidence of the family (see :mod:`turnkit.parse._detect`)."""
    initial_region: str | None = None
    """Open marker of a tool region the output starts in when no ``prefix`` is given (the format's generation
    prompt always ends with it: functionary v3.2 ``>>>``)."""
    calls_in_reasoning: bool = False
    """Tool calls may appear inside reasoning (Kimi K2); reasoning resumes after them."""
    strip: bool = True
    """Trim whitespace at the edges of content and reasoning (llama.cpp and vLLM do)."""
    ids: str = "call_{index}"
    """How call ids are made when the output has none: ``str.format`` with ``index``."""
    content_prefix: str = ""
    """Text put at the start of content (vLLM MiniMax-M2 ``append_think`` re-adds the prompt's ``<think>``)."""
    content_prefix_with_output: bool = False
    """``content_prefix`` goes before the first text of the output, so an empty output stays empty (vLLM's
    streaming reading, which adds it to the first delta) instead of being there from the start."""
    whole_calls: bool = False
    """Opt-in: a tool region's deltas are held back until the region is finished (its close marker, or the
    body's end when it has none). A region the output leaves unfinished is content, as written — vLLM's
    non-streaming tool parsers return the raw text for a call they cannot complete. Nothing is retracted."""
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        check_fields(self)
