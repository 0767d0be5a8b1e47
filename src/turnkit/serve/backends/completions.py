"""A backend for any OpenAI-compatible ``/v1/completions`` server (vLLM, SGLang, llama.cpp, TGI).

turnkit renders the prompt itself and sends it as raw text with ``stream: true``; it asks for
``skip_special_tokens: false`` so that tool-call and reasoning markers survive detokenisation.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from httpx_sse import SSEError, aconnect_sse

from turnkit._args import expect, expect_mapping
from turnkit.serve._errors import BackendError, BadRequestError
from turnkit.serve.backends._base import BackendChunk, SamplingParams, Usage

__all__ = ["CompletionsBackend", "completions_url"]


def completions_url(url: str) -> str:
    """``http://host:8000``, ``.../v1`` or ``.../v1/completions`` → the ``/v1/completions`` URL."""
    url = url.rstrip("/")
    if url.endswith("/completions"):
        return url
    if url.endswith("/v1"):
        return url + "/completions"
    return url + "/v1/completions"


class CompletionsBackend:
    """Streams from ``url``'s ``/v1/completions``. ``model`` defaults to the first id ``/v1/models`` lists."""

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 600.0,
        connect_timeout: float = 10.0,
        extra_body: dict[str, Any] | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        _f = "CompletionsBackend"
        expect(url, str, name="url", func=_f)
        expect(model, str, name="model", func=_f, none=True)
        expect(api_key, str, name="api_key", func=_f, none=True)
        expect(timeout, (int, float), name="timeout", func=_f, accepts="a number of seconds")
        expect(connect_timeout, (int, float), name="connect_timeout", func=_f, accepts="a number of seconds")
        expect_mapping(extra_body, name="extra_body", func=_f, none=True)
        expect(client, httpx.AsyncClient, name="client", func=_f, none=True)
        self.url = completions_url(url)
        self.model = model
        self.extra_body = dict(extra_body or {})
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=connect_timeout), headers=headers
        )
        self._model_checked = model is not None

    def body(self, prompt: str, params: SamplingParams) -> dict[str, Any]:
        """The JSON body sent for ``prompt``."""
        body: dict[str, Any] = {
            "prompt": prompt,
            "stream": True,
            "stream_options": {"include_usage": True},
            "skip_special_tokens": False,
        }
        if self.model is not None:
            body["model"] = self.model
        for name in ("max_tokens", "temperature", "top_p", "seed"):
            value = getattr(params, name)
            if value is not None:
                body[name] = value
        if params.stop:
            body["stop"] = list(params.stop)
        body.update(self.extra_body)
        return body

    async def _discover_model(self) -> None:
        self._model_checked = True
        models_url = self.url.removesuffix("/completions") + "/models"
        try:
            response = await self._client.get(models_url)
            data = response.json().get("data") if response.status_code == 200 else None
            if isinstance(data, list) and data and isinstance(data[0], dict) and isinstance(data[0].get("id"), str):
                self.model = data[0]["id"]
        except (httpx.HTTPError, ValueError, AttributeError):
            pass  # llama.cpp and others ignore the model; an unreachable server fails on the request itself

    async def stream(self, prompt: str, params: SamplingParams) -> AsyncIterator[BackendChunk]:
        if not self._model_checked:
            await self._discover_model()
        finish: str | None = None
        usage: Usage | None = None
        try:
            async with aconnect_sse(self._client, "POST", self.url, json=self.body(prompt, params)) as source:
                response = source.response
                if response.status_code != 200:
                    await response.aread()
                    raise _status_error(response)
                async for event in source.aiter_sse():
                    if event.data == "[DONE]":
                        break
                    try:
                        payload = json.loads(event.data)
                    except json.JSONDecodeError as exc:
                        raise BackendError(f"backend sent invalid JSON in its stream: {exc.msg}") from exc
                    if not isinstance(payload, dict):
                        continue
                    if "error" in payload:
                        raise BackendError(f"backend error: {_message(payload)}")
                    text = ""
                    choices = payload.get("choices") or []
                    if choices and isinstance(choices[0], dict):
                        text = choices[0].get("text") or ""
                        finish = choices[0].get("finish_reason") or finish
                    if isinstance(payload.get("usage"), dict):
                        usage = _usage(payload["usage"])
                    if text:
                        yield BackendChunk(text)
                else:
                    if finish is None:
                        raise BackendError("backend stream ended without [DONE] or a finish_reason")
        except httpx.ConnectError as exc:
            raise BackendError(f"backend unreachable at {self.url}: {exc}", code="backend_unreachable") from exc
        except httpx.TimeoutException as exc:
            raise BackendError(f"backend timed out at {self.url}", code="backend_timeout") from exc
        except (httpx.HTTPError, SSEError) as exc:
            raise BackendError(f"backend stream failed: {exc or type(exc).__name__}") from exc
        yield BackendChunk("", _finish(finish), usage)

    async def aclose(self) -> None:
        await self._client.aclose()


def _finish(reason: str | None) -> str:
    return "length" if reason == "length" else "stop"


def _usage(raw: dict[str, Any]) -> Usage | None:
    prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int):
        return Usage(prompt_tokens=prompt, completion_tokens=completion)
    return None


def _message(payload: Any) -> str:
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)
    if error is not None:
        return str(error)
    return str(payload.get("message") or payload.get("detail") or payload) if isinstance(payload, dict) else ""


def _status_error(response: httpx.Response) -> BackendError | BadRequestError:
    try:
        detail = _message(response.json())
    except ValueError:
        detail = response.text[:300]
    if 400 <= response.status_code < 500:
        return BadRequestError(
            f"backend rejected the request ({response.status_code}): {detail}", code="backend_rejected"
        )
    return BackendError(f"backend answered {response.status_code}: {detail}")
