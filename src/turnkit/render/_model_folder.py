"""Local Hugging Face model folders: the chat template(s) and special tokens, read as transformers 5.23 reads them.

Nothing is downloaded and no tokenizer is built: only the small files that decide the template and the
special tokens are read. Precedence (tokenizer view, ``AutoTokenizer.from_pretrained``):

1. ``chat_template.jinja`` (named ``default``) and ``additional_chat_templates/*.jinja``; if any of these
   exist they replace the template in the config entirely;
2. else ``tokenizer_config.json`` ``"chat_template"`` (a string, or a list of ``{name, template}``);
3. else (turnkit's fallback, where the tokenizer would have none) the processor's files.

The processor view (``AutoProcessor``, ``processor=True``) is: ``processor_config.json`` ``"chat_template"``,
else the legacy ``chat_template.json``, else the ``.jinja`` files.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnkit._args import check_fields, expect, expect_mapping, expect_path
from turnkit.errors import TemplateError, TemplateLimitError, TemplateNotFoundError
from turnkit.limits import DEFAULT_LIMITS, Limits
from turnkit.render._tokenizer_defaults import class_token_defaults

__all__ = [
    "ModelFolder",
    "check_template_name",
    "read_model_folder",
    "write_model_folder",
]

TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
CHAT_TEMPLATE_FILE = "chat_template.jinja"
CHAT_TEMPLATE_DIR = "additional_chat_templates"
LEGACY_CHAT_TEMPLATE_FILE = "chat_template.json"
PROCESSOR_CONFIG_FILE = "processor_config.json"
SPECIAL_TOKENS_MAP_FILE = "special_tokens_map.json"
TOKENIZER_FILE = "tokenizer.json"

# transformers' named special tokens, in its order.
STANDARD_SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
_FORBIDDEN_NAME_CHARS = ("/", "\\", "\x00")

ChatTemplateValue = str | dict[str, str]


@dataclass(frozen=True, slots=True)
class ModelFolder:
    """What a model folder says about prompting: its chat template(s) and the special tokens a template sees."""

    chat_template: str | dict[str, str] | None
    """One template, named templates (``{"default": ..., "tool_use": ...}``), or none."""
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    """Special tokens as strings (``{"bos_token": "<s>", ...}``), passed to the template like transformers does."""
    response_template: dict[str, Any] | None = None
    """``tokenizer_config.json``'s ``response_template`` (transformers >= 5.13), as stored; validated when a
    format is built from it (:class:`~turnkit.ResponseTemplateFormat`, :func:`~turnkit.model_format`)."""

    def __post_init__(self) -> None:
        check_fields(self)


def check_template_name(name: object) -> str:
    """``name`` if it is safe as a file name in ``additional_chat_templates/``, else TemplateNotFoundError."""
    if not isinstance(name, str) or not name:
        raise TemplateNotFoundError(f"invalid chat template name {name!r}: expected a non-empty string")
    if name in (".", "..") or any(char in name for char in _FORBIDDEN_NAME_CHARS) or os.path.isabs(name):
        raise TemplateNotFoundError(
            f"invalid chat template name {name!r}: names may not contain path separators, NUL or be '.'/'..'"
        )
    return name


# --- reading ----------------------------------------------------------------------------------


def _read_text(path: Path, limits: Limits) -> str:
    """A file's text exactly as ``open(path, encoding="utf-8").read()`` gives it (universal newlines)."""
    try:
        size = path.stat().st_size
        if size > limits.max_input_chars:
            raise TemplateLimitError(
                f"{path} is {size} bytes, over the {limits.max_input_chars}-byte limit (Limits.max_input_chars)"
            )
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise TemplateError(f"{path} is not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise TemplateError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _read_json(path: Path, limits: Limits) -> Any:
    text = _read_text(path, limits)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TemplateError(
            f"{path} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", position=exc.pos
        ) from exc
    except RecursionError as exc:
        raise TemplateError(f"{path} is nested too deeply to read") from exc


def _read_json_object(path: Path, limits: Limits) -> dict[str, Any]:
    value = _read_json(path, limits)
    if not isinstance(value, dict):
        raise TemplateError(f"{path} must hold a JSON object, not {type(value).__name__}")
    return value


def _jinja_files(folder: Path, limits: Limits) -> tuple[str | None, dict[str, str]]:
    """``chat_template.jinja`` and ``additional_chat_templates/NAME.jinja`` (sorted by name)."""
    main_path = folder / CHAT_TEMPLATE_FILE
    main = _read_text(main_path, limits) if main_path.is_file() else None
    extra: dict[str, str] = {}
    template_dir = folder / CHAT_TEMPLATE_DIR
    if template_dir.is_dir():
        total = len(main or "")
        for path in sorted(template_dir.glob("*.jinja")):
            text = extra[path.name.removesuffix(".jinja")] = _read_text(path, limits)
            total += len(text)
            if total > limits.max_input_chars:
                raise TemplateLimitError(
                    f"the chat templates in {folder} add up to more than {limits.max_input_chars} characters "
                    "(Limits.max_input_chars)"
                )
    return main, extra


def _config_chat_template(value: Any, path: Path) -> ChatTemplateValue | None:
    """``tokenizer_config.json``'s ``chat_template``: a string, or a list of ``{name, template}`` made a dict."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return dict(value)  # transformers keeps a JSON object as the dict of named templates
    if isinstance(value, (list, tuple)):
        templates: dict[str, str] = {}
        for index, entry in enumerate(value):
            if not isinstance(entry, dict) or "name" not in entry or "template" not in entry:
                raise TemplateError(
                    f"{path}: chat_template[{index}] must be an object with 'name' and 'template'",
                    pointer=f"/chat_template/{index}",
                )
            name, template = entry["name"], entry["template"]
            if not isinstance(name, str) or not isinstance(template, str):
                raise TemplateError(
                    f"{path}: chat_template[{index}] needs a string 'name' and a string 'template'",
                    pointer=f"/chat_template/{index}",
                )
            templates[name] = template
        return templates
    raise TemplateError(
        f"{path}: chat_template must be a string or a list of {{name, template}} objects, not {type(value).__name__}",
        pointer="/chat_template",
    )


def _processor_chat_template(folder: Path, limits: Limits) -> ChatTemplateValue | None:
    """The template ``AutoProcessor`` would load (``ProcessorMixin.get_processor_dict``)."""
    main, extra = _jinja_files(folder, limits)
    legacy_path = folder / LEGACY_CHAT_TEMPLATE_FILE
    templates: Any
    if legacy_path.is_file():
        legacy = _read_json_object(legacy_path, limits)
        if "chat_template" not in legacy:
            raise TemplateError(f"{legacy_path} has no 'chat_template' key")
        if extra:
            raise TemplateError(
                f"{folder} combines a legacy {LEGACY_CHAT_TEMPLATE_FILE} with {CHAT_TEMPLATE_DIR}/, which transformers "
                f"refuses; replace {LEGACY_CHAT_TEMPLATE_FILE} with {CHAT_TEMPLATE_FILE}"
            )
        templates = {"default": legacy["chat_template"]}
    else:
        templates = dict(extra)
        if main is not None:
            templates["default"] = main
    if "default" in templates and len(templates) == 1:
        templates = templates["default"]

    if not templates:  # transformers only passes a non-empty result on
        templates = None
    processor_path = folder / PROCESSOR_CONFIG_FILE
    if processor_path.is_file():
        in_config = _read_json_object(processor_path, limits).get("chat_template")
        if in_config is not None:
            templates = in_config
    if templates is None:
        return None
    if isinstance(templates, str):
        return templates
    if isinstance(templates, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in templates.items()):
        return dict(templates)
    raise TemplateError(f"{folder}: the processor's chat_template must be a string or an object of strings")


def _token_text(value: Any, where: str) -> str | None:
    """A special token's text (AddedToken objects were already turned into theirs)."""
    if value is None or isinstance(value, str):
        return value
    raise TemplateError(f"{where}: a special token must be a string or an AddedToken object, got {value!r:.80}")


def _is_added_token(value: Any) -> bool:
    return isinstance(value, dict) and value.get("__type") == "AddedToken" and isinstance(value.get("content"), str)


def _special_tokens(folder: Path, config: dict[str, Any], config_path: Path, limits: Limits) -> dict[str, str]:
    """The named special tokens ``tokenizer.special_tokens_map`` holds after loading (the template's kwargs).

    Mirrors ``PreTrainedTokenizerBase._from_pretrained`` and ``__init__``: the seven standard names, plus
    model-specific ``*_token`` keys and a named ``extra_special_tokens`` object; a legacy
    ``special_tokens_map.json`` counts only when the config has no ``added_tokens_decoder``; a missing
    ``pad_token`` falls back to ``tokenizer.json``'s padding settings.
    """
    kwargs = dict(config)
    where = str(config_path)
    if "additional_special_tokens" in kwargs and not kwargs.get("extra_special_tokens"):
        kwargs["extra_special_tokens"] = kwargs.pop("additional_special_tokens")

    # Model-specific tokens named in the config as plain strings (AddedToken objects are picked up later).
    explicit: dict[str, Any] = {
        key: kwargs.pop(key)
        for key in list(kwargs)
        if key not in STANDARD_SPECIAL_TOKENS and key.endswith("_token") and isinstance(kwargs[key], str)
    }
    if isinstance(kwargs.get("extra_special_tokens"), dict):
        explicit.update(kwargs.pop("extra_special_tokens"))

    legacy_path = folder / SPECIAL_TOKENS_MAP_FILE
    if "added_tokens_decoder" not in kwargs and legacy_path.is_file():
        for key, value in _read_json_object(legacy_path, limits).items():
            if key == "extra_special_tokens":
                if isinstance(value, dict):
                    explicit.update(value)
                continue
            if isinstance(value, dict):
                value = {k: v for k, v in value.items() if k != "special"}
                if "__type" in value or not isinstance(value.get("content"), str):
                    raise TemplateError(f"{legacy_path}: {key} is not a valid AddedToken object")
                value = value["content"]
            kwargs[key] = value
        where = f"{config_path} / {legacy_path.name}"

    # AddedToken objects ({"__type": "AddedToken", "content": ...}) become their text.
    for key, value in list(kwargs.items()):
        if _is_added_token(value):
            kwargs[key] = value["content"]
    explicit = {key: value["content"] if _is_added_token(value) else value for key, value in explicit.items()}

    # Defaults of the tokenizer class the config names, for keys the files leave out.
    for key, default in class_token_defaults(config.get("tokenizer_class")).items():
        if key not in kwargs and key not in explicit:
            kwargs[key] = default

    if "pad_token" not in kwargs:
        padding = kwargs.get("tokenizer_padding") or _tokenizer_json_padding(folder, limits)
        if isinstance(padding, dict) and "pad_token" in padding:
            kwargs["pad_token"] = padding["pad_token"]

    tokens: dict[str, str] = {}
    for key in STANDARD_SPECIAL_TOKENS:
        value = kwargs.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise TemplateError(f"{where}: special token {key!r} must be a string or an AddedToken object")
        tokens[key] = value
    automatic = {
        key: value
        for key, value in kwargs.items()
        if key not in STANDARD_SPECIAL_TOKENS and key.endswith("_token") and isinstance(value, str)
    }
    for key, value in {**automatic, **explicit}.items():
        text = _token_text(value, f"{where}: {key}")
        if text is not None:
            tokens[key] = text
    return tokens


_HEAD_CHARS = 1 << 16


def _tokenizer_json_padding(folder: Path, limits: Limits) -> Any:
    """``tokenizer.json``'s ``padding`` object (it may define the pad token), or None.

    ``tokenizers`` writes ``version``, ``truncation`` and ``padding`` first, so the first few kilobytes
    normally answer; only an unusual file (keys in another order) is parsed whole. A big vocabulary is
    never parsed just for this.
    """
    path = folder / TOKENIZER_FILE
    if not path.is_file():
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            head = handle.read(_HEAD_CHARS)
    except (OSError, UnicodeDecodeError):
        head = ""  # the whole-file read below reports it properly
    found, value = _leading_member(head, "padding")
    if found:
        return value
    data = _read_json(path, limits)
    return data.get("padding") if isinstance(data, dict) else None


_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def _leading_member(text: str, wanted: str) -> tuple[bool, Any]:
    """Scan the first members of the JSON object at the start of ``text`` for ``wanted``.

    Returns ``(True, value)`` when found within ``text``, ``(False, None)`` when the text ends first or
    is not a simple object start (the caller then parses the whole file).
    """
    decoder = json.JSONDecoder()

    def skip(index: int) -> int:
        match = _JSON_SPACE.match(text, index)
        return match.end() if match else index

    index = skip(0)
    if not text.startswith("{", index):
        return False, None
    index += 1
    try:
        while True:
            key, index = decoder.raw_decode(text, skip(index))
            index = skip(index)
            if not isinstance(key, str) or not text.startswith(":", index):
                return False, None
            value, index = decoder.raw_decode(text, skip(index + 1))
            if key == wanted:
                return True, value
            index = skip(index)
            if not text.startswith(",", index):
                return False, None
            index += 1
    except json.JSONDecodeError:
        return False, None


def read_model_folder(
    path: str | os.PathLike[str], *, processor: bool = False, limits: Limits | None = None
) -> ModelFolder:
    """Read a local model folder's chat template(s) and special tokens, the way transformers 5.23 loads them.

    ``processor=True`` reads the template ``AutoProcessor`` would use instead of the tokenizer's.
    Raises :class:`~turnkit.TemplateNotFoundError` for a missing folder and :class:`~turnkit.TemplateError`
    naming the file for unreadable or invalid files. A folder without any template gives ``chat_template=None``.
    """
    expect_path(path, name="path", func="read_model_folder")
    expect(processor, bool, name="processor", func="read_model_folder")
    expect(limits, Limits, name="limits", func="read_model_folder", none=True)
    limits = limits or DEFAULT_LIMITS
    folder = Path(path)
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise TemplateNotFoundError(f"model folder {str(folder)!r} {what}")

    config_path = folder / TOKENIZER_CONFIG_FILE
    config = _read_json_object(config_path, limits) if config_path.is_file() else {}
    template_kwargs = _special_tokens(folder, config, config_path, limits)
    response_template = _response_template(config.get("response_template"), config_path)

    if processor:
        return ModelFolder(_processor_chat_template(folder, limits), template_kwargs, response_template)

    main, extra = _jinja_files(folder, limits)
    chat_template: ChatTemplateValue | None
    if main is not None or extra:
        templates = {} if main is None else {"default": main}
        templates.update(extra)  # transformers reads additional templates after chat_template.jinja
        chat_template = templates["default"] if list(templates) == ["default"] else templates
    else:
        chat_template = _config_chat_template(config.get("chat_template"), config_path)
    if chat_template is None:
        chat_template = _processor_chat_template(folder, limits)
    return ModelFolder(chat_template, template_kwargs, response_template)


def _response_template(value: Any, path: Path) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise TemplateError(f"{path}: response_template must be a JSON object, not {type(value).__name__}")
    return value


# --- writing ----------------------------------------------------------------------------------


def _write_text(path: Path, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except UnicodeEncodeError as exc:
        raise TemplateError(f"cannot write {path}: the text is not encodable as UTF-8 ({exc.reason})") from exc
    except OSError as exc:
        raise TemplateError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _write_json(path: Path, data: dict[str, Any]) -> None:
    _write_text(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def _remove(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise TemplateError(f"cannot remove stale {path}: {exc.strerror or exc}") from exc


def write_model_folder(
    path: str | os.PathLike[str],
    *,
    chat_template: str | Mapping[str, str],
    template_kwargs: Mapping[str, str] | None = None,
    response_template: Mapping[str, Any] | None = None,
) -> None:
    """Write chat template(s) (and special tokens) into a model folder the way ``save_pretrained`` does.

    A single template goes to ``chat_template.jinja``; named templates put ``default`` there and the others in
    ``additional_chat_templates/NAME.jinja``. Template files from an earlier save that are not part of this one
    are removed, and ``tokenizer_config.json`` loses its ``chat_template`` key, so the folder loads back (in
    transformers and in turnkit) as exactly what was written. ``template_kwargs`` (``*_token`` names to
    strings) are stored in ``tokenizer_config.json``, and so is ``response_template`` when given (as
    ``save_pretrained`` does; when not given, an existing one is left as it is).
    """
    expect_path(path, name="path", func="write_model_folder")
    expect(
        chat_template,
        (str, Mapping),
        name="chat_template",
        func="write_model_folder",
        accepts="str or a mapping of names to str",
    )
    expect_mapping(template_kwargs, name="template_kwargs", func="write_model_folder", none=True)
    expect_mapping(response_template, name="response_template", func="write_model_folder", none=True)
    if isinstance(chat_template, str):
        templates: dict[str, str] = {"default": chat_template}
    elif isinstance(chat_template, Mapping) and chat_template:
        templates = {}
        for name, template in chat_template.items():
            if name != "default":
                check_template_name(name)
            if not isinstance(template, str):
                raise TemplateError(f"chat template {name!r} must be a string, not {type(template).__name__}")
            templates[name] = template
    else:
        raise TemplateError("chat_template must be a string or a non-empty mapping of names to strings")
    tokens = dict(template_kwargs or {})
    for key, value in tokens.items():
        if not isinstance(key, str) or not key.endswith("_token") or not isinstance(value, str):
            raise TemplateError(
                f"template_kwargs entry {key!r}: only special tokens (names ending in '_token', string values) "
                "are stored in a model folder"
            )

    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TemplateError(f"cannot create model folder {str(folder)!r}: {exc.strerror or exc}") from exc

    template_dir = folder / CHAT_TEMPLATE_DIR
    extras = {name: template for name, template in templates.items() if name != "default"}
    if "default" in templates:
        _write_text(folder / CHAT_TEMPLATE_FILE, templates["default"])
    else:
        _remove(folder / CHAT_TEMPLATE_FILE)
    if template_dir.is_dir():
        for stale in template_dir.glob("*.jinja"):
            if stale.name.removesuffix(".jinja") not in extras:
                _remove(stale)
    if extras:
        try:
            template_dir.mkdir(exist_ok=True)
        except OSError as exc:
            raise TemplateError(f"cannot create {template_dir}: {exc.strerror or exc}") from exc
        for name, template in extras.items():
            target = template_dir / f"{name}.jinja"
            if target.resolve().parent != template_dir.resolve():  # belt and braces after check_template_name
                raise TemplateNotFoundError(f"invalid chat template name {name!r}")
            _write_text(target, template)

    config_path = folder / TOKENIZER_CONFIG_FILE
    if config_path.is_file() or tokens or response_template is not None:
        config = _read_json_object(config_path, DEFAULT_LIMITS) if config_path.is_file() else {}
        config.pop("chat_template", None)
        if response_template is not None:
            if not isinstance(response_template, Mapping):
                raise TemplateError("response_template must be a mapping (a JSON object)")
            config["response_template"] = json.loads(json.dumps(dict(response_template)))
        extra_tokens = config.get("extra_special_tokens")
        for key, value in tokens.items():
            config[key] = value
            if isinstance(extra_tokens, dict) and key in extra_tokens:
                extra_tokens[key] = value
        _write_json(config_path, config)
        legacy_path = folder / SPECIAL_TOKENS_MAP_FILE
        if tokens and "added_tokens_decoder" not in config and legacy_path.is_file():
            legacy = _read_json_object(legacy_path, DEFAULT_LIMITS)
            if any(key in legacy for key in tokens):
                legacy.update({key: value for key, value in tokens.items() if key in legacy})
                _write_json(legacy_path, legacy)
