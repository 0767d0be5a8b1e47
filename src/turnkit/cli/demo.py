"""``turnkit demo``: a bundled tool-calling conversation rendered through a bundled ChatML/Hermes-style template."""

from __future__ import annotations

import argparse
import json
import sys
from importlib.resources import files
from typing import Any

from turnkit.render import ChatTemplate

TEMPLATE_FILE = "chatml-tools.jinja"


def get_current_temperature(location: str, unit: str = "celsius") -> float:
    """
    Get the current temperature at a location.

    Args:
        location: The location, in the format "City, Country"
        unit: The temperature unit (choices: ["celsius", "fahrenheit"])

    Returns:
        The current temperature in the requested unit.
    """
    return 22.0


def get_current_wind_speed(location: str) -> float:
    """
    Get the current wind speed at a location, in km/h.

    Args:
        location: The location, in the format "City, Country"
    """
    return 6.0


DEMO_TOOLS = [get_current_temperature, get_current_wind_speed]

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a weather bot. Answer in the unit used at the location."},
    {"role": "user", "content": "Hey, what's the temperature in Paris right now?"},
    {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {
                    "name": "get_current_temperature",
                    "arguments": {"location": "Paris, France", "unit": "celsius"},
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_0", "name": "get_current_temperature", "content": "22.0"},
]


def demo_template() -> ChatTemplate:
    """The bundled ChatML/Hermes-style chat template."""
    return ChatTemplate(files("turnkit").joinpath("data", TEMPLATE_FILE).read_text(encoding="utf-8"))


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="render a bundled tool-calling conversation and print the prompt",
        description="Render a bundled conversation (system prompt, user turn, a tool call and its result, two "
        "tools given as Python functions) through turnkit's bundled ChatML/Hermes-style template.",
    )
    parser.add_argument(
        "--round-trip",
        action="store_true",
        help="also stream a bundled model reply through the hermes output parser, print its deltas and the parsed "
        "message, and render the next prompt with that message appended",
    )
    parser.add_argument(
        "--live",
        action="store_true",
        help="run the tool loop (turnkit.agent) live on a bundled recorded model: watch reasoning, content and "
        "tool calls stream, the Python tool run, and the model answer from its result (colours with rich)",
    )
    parser.add_argument("--delay", type=float, default=0.03, help="seconds between streamed chunks with --live")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "live", False):
        _live(args.delay)
        return 0
    prompt = demo_template().render(
        CONVERSATION,
        tools=[get_current_temperature, get_current_wind_speed],
        add_generation_prompt=True,
    )
    sys.stdout.write(prompt)
    if args.round_trip:
        _round_trip(prompt)
    return 0


# What a Hermes-style model might answer to the prompt above: reasoning, then the final answer.
MODEL_REPLY = "<think>The tool said 22.0 and Paris uses celsius.</think>It is 22 °C in Paris right now."


def _round_trip(prompt: str) -> None:
    from turnkit.messages import to_template
    from turnkit.parse import load_format

    print("\n--- model reply, streamed in 8-character chunks: OpenAI-style deltas ---")
    stream = load_format("hermes").stream(prefix=prompt)
    for start in range(0, len(MODEL_REPLY), 8):
        for delta in stream.feed(MODEL_REPLY[start : start + 8]):
            print(json.dumps(delta, ensure_ascii=False))
    for delta in stream.close():
        print(json.dumps(delta, ensure_ascii=False))
    message = stream.message
    print("--- parsed message ---")
    print(json.dumps(message, ensure_ascii=False, indent=2))
    print("--- next prompt, with the parsed message appended ---")
    conversation = [*CONVERSATION, to_template(message)]
    sys.stdout.write(demo_template().render(conversation, tools=[get_current_temperature, get_current_wind_speed]))


# What the model answers first: reasoning, then a call to the Python tool.
TOOL_CALL_REPLY = (
    "<think>I should look the temperature up.</think><tool_call>\n"
    '{"name": "get_current_temperature", "arguments": {"location": "Paris, France", "unit": "celsius"}}\n</tool_call>'
)


def _live(delay: float) -> None:
    """The tool loop on a recorded model: each step's deltas as they stream, the tool result, the answer."""
    import asyncio

    from turnkit.agent import Agent, AgentFinished, StepDelta, StepStarted, ToolResult

    async def model(prompt: str) -> Any:
        reply = MODEL_REPLY if "<tool_response>" in prompt else TOOL_CALL_REPLY
        for start in range(0, len(reply), 4):
            await asyncio.sleep(delay)
            yield reply[start : start + 4]

    out = _Printer()
    agent = Agent(DEMO_TOOLS, template=demo_template(), output_format="hermes", backend=model)

    async def main() -> None:
        channel = None
        names: dict[int, str] = {}
        async for event in agent.run(CONVERSATION[:2]):
            if isinstance(event, StepStarted):
                out.line(f"── step {event.step} " + "─" * 30, "bold")
                channel = None
            elif isinstance(event, StepDelta):
                for key, text in _pieces(event.delta, names):
                    if key != channel:
                        out.write(f"\n[{key}] " if channel else f"[{key}] ", "bold")
                        channel = key
                    out.write(text, _STYLES.get(key.split(" ")[0], ""))
            elif isinstance(event, ToolResult):
                status = "ok" if event.ok else "error"
                out.line(f"\n[tool result {event.name}: {status}] {event.content}", "green" if event.ok else "red")
                channel = None
            elif isinstance(event, AgentFinished):
                out.line(f"\n── done after {event.steps} steps ({event.reason})", "bold")
                out.line(json.dumps(event.message, ensure_ascii=False), "")

    asyncio.run(main())


_STYLES = {"reasoning": "dim italic", "content": "", "tool": "cyan"}


def _pieces(delta: dict[str, Any], names: dict[int, str]) -> list[tuple[str, str]]:
    pieces = []
    if delta.get("reasoning_content"):
        pieces.append(("reasoning", delta["reasoning_content"]))
    if delta.get("content"):
        pieces.append(("content", delta["content"]))
    for call in delta.get("tool_calls") or ():
        function = call.get("function") or {}
        if "id" in call:
            names[call["index"]] = f"tool call {function.get('name')}"
        pieces.append((names.get(call["index"], "tool call"), function.get("arguments") or ""))
    return pieces


class _Printer:
    """Writes with rich's colours when rich is installed, plain text otherwise."""

    def __init__(self) -> None:
        try:
            from rich.console import Console
        except ImportError:
            self.console: Any = None
        else:
            self.console = Console(highlight=False, soft_wrap=True)

    def write(self, text: str, style: str) -> None:
        if not text:
            return
        if self.console is not None:
            self.console.print(text, style=style or None, end="", markup=False)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()

    def line(self, text: str, style: str) -> None:
        self.write(text + "\n", style)
