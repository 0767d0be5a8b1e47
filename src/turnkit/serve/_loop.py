"""The tool loop over the gateway, as AG-UI and the AI SDK endpoints run it.

With ``gateway.tool_functions`` the server calls them (:class:`turnkit.agent.Agent`, up to
``gateway.max_steps`` model calls); tools the client declared stay the client's: a call to one ends the run so
the client can execute it. Without tool functions this is one model turn. Each turn is a gateway
:class:`~turnkit.serve.Run`, so the tool-call policy, shutdown and errors are the same as everywhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Mapping
from typing import Any

from turnkit.agent import Agent, AgentEvent
from turnkit.serve._chat import ChatRequest
from turnkit.serve._gateway import Gateway, Run

__all__ = ["start_loop"]


async def start_loop(gateway: Gateway, chat: ChatRequest) -> AsyncIterator[AgentEvent]:
    """Render and start the first turn now (a bad request is a 400, an unreachable backend a 502, before any
    response starts), then return the loop's events."""
    agent = Agent(
        gateway.tool_functions,
        step=lambda m, t: _next_run(m, t),
        max_steps=gateway.max_steps,
        external_tools=list(chat.tools or ()),
    )
    tools = agent.tool_schemas or None
    pending: list[Run] = []

    def _next_run(messages: list[dict[str, Any]], step_tools: list[dict[str, Any]] | None) -> Run:
        if pending:
            return pending.pop()
        return gateway.run(dataclasses.replace(chat, messages=messages, tools=step_tools))

    first = gateway.run(dataclasses.replace(chat, tools=tools))
    try:
        await first.start()
    except BaseException:
        await first.aclose()
        raise
    pending.append(first)
    return _events(agent, list(chat.messages), first)


async def _events(agent: Agent, messages: list[Mapping[str, Any]], first: Run) -> AsyncIterator[AgentEvent]:
    events = agent.run(messages)
    try:
        async for event in events:
            yield event
    finally:
        await events.aclose()
        await first.aclose()
