"""``turnkit serve``: an OpenAI-compatible server that renders prompts and parses replies for a raw backend."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from pathlib import Path
from typing import Any

from turnkit.cli import CliError

REASONING_FIELDS = ("both", "reasoning_content", "reasoning", "none")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve an OpenAI-compatible chat API in front of a raw /v1/completions backend (needs turnkit[serve])",
        description="Serve POST /v1/chat/completions (and every other turnkit protocol): turnkit renders the "
        "prompt with the chat template, streams raw text from the backend and parses it with the output format. "
        "With no arguments it starts on an embedded default (bundled template, hermes format, recorded replies).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default: 8000; 0 = any free port)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--model", metavar="FOLDER", help="a local Hugging Face model folder: its chat template and special tokens"
    )
    source.add_argument("--template", metavar="FILE", help="a Jinja chat template file")
    parser.add_argument(
        "--format",
        metavar="NAME",
        help="the output format (list them with: turnkit formats); default: the model folder's response_template "
        "when it ships one, else the format the template's markers name",
    )
    parser.add_argument(
        "--backend",
        metavar="URL|replay:FILE",
        help="an OpenAI-compatible /v1/completions server "
        "(vLLM, SGLang, llama.cpp, TGI) or replay:FILE (JSONL recorded outputs); default: the "
        "embedded replay recordings",
    )
    parser.add_argument(
        "--replay-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with a replay backend: pause between chunks, to imitate a model's pace (default: 0)",
    )
    parser.add_argument(
        "--backend-model",
        metavar="NAME",
        help="model name sent to the backend (default: the first one its /v1/models lists)",
    )
    parser.add_argument("--served-model-name", metavar="NAME", help="the model id /v1/models reports")
    parser.add_argument(
        "--api-key",
        metavar="KEY",
        help="require Authorization: Bearer KEY (default: the TURNKIT_API_KEY environment variable; none = open)",
    )
    parser.add_argument(
        "--reasoning-field",
        choices=REASONING_FIELDS,
        default="both",
        help="where reasoning goes in OpenAI responses (default: both reasoning_content and reasoning)",
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=("critical", "error", "warning", "info", "debug"),
        help="uvicorn's log level (default: warning)",
    )
    parser.add_argument(
        "--tools",
        metavar="MODULE:ATTR",
        help="Python functions the server calls itself in "
        "POST /agui and POST /api/chat (a list or dict of functions, e.g. myapp.tools:TOOLS); "
        "OpenAI chat completions never runs them",
    )
    parser.add_argument(
        "--max-steps", type=int, default=8, help="model calls per request in the tool loop (default: 8)"
    )
    parser.set_defaults(handler=run)


def load_tools(spec: str) -> dict[str, Any]:
    """``module:attr`` → {name: function}; attr is a list of functions or a dict name → function."""
    import importlib

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CliError(f"--tools: expected MODULE:ATTR, got {spec!r}")
    try:
        value = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise CliError(f"--tools: cannot load {spec!r}: {exc}") from exc
    items = value.items() if isinstance(value, dict) else ((getattr(f, "__name__", None), f) for f in value)
    tools = {str(name): function for name, function in items if callable(function)}
    if not tools:
        raise CliError(f"--tools: {spec!r} holds no functions")
    return tools


def _detected_format(texts: list[str]) -> str:
    """The built-in format the template's own markers name (turnkit.detect_format); a fallback is no answer."""
    from turnkit import detect_format

    detections = [detect_format(text) for text in texts]
    found = [d for d in detections if d.source == "markers" and d.format is not None]
    if not found:
        reason = "; ".join(d.reason for d in detections)
        raise CliError(
            f"cannot tell the output format from the chat template's markers ({reason}); pass --format NAME "
            "(list them with: turnkit formats)"
        )
    return str(found[0].format)


def build_gateway(args: argparse.Namespace) -> Any:
    """The gateway the flags describe (start-up errors are CliError / TurnkitError, printed as one line)."""
    from turnkit import ChatTemplate, read_model_folder
    from turnkit.serve import Gateway, backend_from_spec, embedded_replay, embedded_template

    template: Any
    texts: list[str]
    kwargs: dict[str, Any] = {}
    response_template = None
    if args.model:
        folder = read_model_folder(args.model)
        if folder.chat_template is None:
            raise CliError(f"model folder {args.model!r} has no chat template; pass --template FILE")
        template = folder.chat_template
        texts = [template] if isinstance(template, str) else list(template.values())
        kwargs = dict(folder.template_kwargs)
        response_template = folder.response_template
        name = args.served_model_name or Path(args.model).resolve().name
    elif args.template:
        template = Path(args.template).read_text(encoding="utf-8")
        texts = [template]
        name = args.served_model_name or Path(args.template).stem
    else:
        template = embedded_template()
        texts = []
        name = args.served_model_name or "turnkit-replay"
    fmt: Any = args.format
    if fmt is None and response_template is not None:
        from turnkit import ResponseTemplateFormat

        fmt = ResponseTemplateFormat(response_template)  # the folder's own parser comes first
    elif fmt is None:
        fmt = _detected_format(texts) if texts else "hermes"
    if args.backend:
        try:
            backend = backend_from_spec(args.backend)
        except ValueError as exc:
            raise CliError(f"--backend: {exc}") from exc
        if args.backend_model and hasattr(backend, "model"):
            backend.model = args.backend_model
        if hasattr(backend, "delay"):
            backend.delay = args.replay_delay
    elif args.model or args.template:
        raise CliError("pass --backend URL (an OpenAI-compatible /v1/completions server) or --backend replay:FILE")
    else:
        backend = embedded_replay(delay=args.replay_delay)
    if not isinstance(template, ChatTemplate):
        template = ChatTemplate(template, special_tokens=kwargs)
    tools = load_tools(args.tools) if getattr(args, "tools", None) else None
    return Gateway(
        template,
        fmt,
        backend,
        served_model_name=name,
        reasoning_field=args.reasoning_field,
        tool_functions=tools,
        max_steps=getattr(args, "max_steps", 8),
    )


def run(args: argparse.Namespace) -> int:
    from turnkit._extras import require
    from turnkit.serve import create_app

    uvicorn = require("uvicorn", "serve", purpose="turnkit serve")
    gateway = build_gateway(args)
    api_key = args.api_key or os.environ.get("TURNKIT_API_KEY") or None
    app = create_app(gateway, api_key=api_key)
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level=args.log_level, lifespan="on", timeout_graceful_shutdown=5
    )
    server = _server(config, gateway, args.host)
    server.run()
    if signal.SIGINT in server.stopped_by:
        # uvicorn re-raises the signal once shut down, which a shell's `cmd &` (SIGINT ignored) swallows:
        # the exit status of an interrupted server must not depend on how it was launched.
        raise KeyboardInterrupt
    return 0


def _server(config: Any, gateway: Any, host: str) -> Any:
    """uvicorn's server, which also ends in-flight streams (with an error event) when a signal stops it."""
    import uvicorn

    class Server(uvicorn.Server):
        loop: asyncio.AbstractEventLoop | None = None
        stopped_by: tuple[int, ...] = ()

        async def serve(self, sockets: Any = None) -> None:
            self.loop = asyncio.get_running_loop()
            try:
                await super().serve(sockets)
            finally:
                await gateway.aclose()

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started and self.servers:
                port = self.servers[0].sockets[0].getsockname()[1]
                shown = f"[{host}]" if ":" in host else host
                print(
                    f"turnkit serve: listening on http://{shown}:{port}/v1 (model {gateway.served_model_name}, "
                    f"format {gateway.format_name})",
                    flush=True,
                )

        def handle_exit(self, sig: int, frame: Any) -> None:
            self.stopped_by += (sig,)
            if self.loop is not None:
                self.loop.call_soon_threadsafe(gateway.shutdown)
            super().handle_exit(sig, frame)

    return Server(config)
