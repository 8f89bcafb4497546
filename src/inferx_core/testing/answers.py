"""A scripted OpenAI-compatible server that answers questions from a table, for accuracy tests.

:class:`AnswerServer` serves ``/v1/completions`` and ``/v1/chat/completions``
(not streamed), ``/v1/models`` and ``/health``. Each request's question is
the last ``Question: ...`` of its prompt (GSM8K's prompt format; for chat,
of the last user message, else that whole message), and the reply is the
table's text for it, else ``default``. Feed it a known fraction of right
answers and the measured accuracy must be exactly that fraction::

    with AnswerServer({"What is 2+2?": "#### 4"}) as server:
        ...  # server.base_url, server.requests

A reasoning model: ``thinking`` is text every reply thinks before its answer,
in ``message.reasoning_content`` or ``message.reasoning`` (chat, as vLLM and
SGLang split it) or inline as ``<think>...</think>`` before the answer
(``reasoning_field="content"``, and always on the completions API, which never
splits it); ``answer_after_thinking=False`` replies with the thinking only
(cut by its length limit: an unclosed ``<think>`` inline).

Standard library only; a thread per connection (``ThreadingHTTPServer``).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = ["AnswerServer", "question_of"]

_QUESTION = re.compile(r"Question:\s*(.*?)\s*\nAnswer:", re.S)


def question_of(prompt: str) -> str:
    """The last ``Question: ...`` of a GSM8K-style prompt (few-shot examples come first)."""
    found = _QUESTION.findall(prompt)
    return found[-1].strip() if found else prompt.strip()


def _prompt_text(body: dict[str, Any], chat: bool) -> str:
    if chat:
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        content = users[-1].get("content", "") if users else ""
        if isinstance(content, list):  # content parts
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        return str(content)
    prompt = body.get("prompt", "")
    return str(prompt[0] if isinstance(prompt, list) and prompt else prompt)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet in tests
        return

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, {})
        elif self.path == "/v1/models":
            listed = [{"id": self.server.model, "object": "model"}]
            self._send(200, {"object": "list", "data": listed})
        else:
            self._send(404, {"error": {"message": "not found", "code": 404}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "bad JSON", "code": 400}})
            return
        chat = self.path == "/v1/chat/completions"
        if not chat and self.path != "/v1/completions":
            self._send(404, {"error": {"message": "not found", "code": 404}})
            return
        question = question_of(_prompt_text(body, chat))
        text: str | None = self.server.reply(question)
        usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "logprobs": None}
        thinking, field = self.server.thinking, self.server.reasoning_field
        split = chat and field != "content"
        if thinking and not self.server.answer_after_thinking:
            text, choice["finish_reason"] = (None if split else ""), "length"
        if thinking and not split:  # inline, closed only when the answer follows
            text = f"<think>{thinking}" + (f"</think>{text}" if text else "")
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
            if thinking and split:
                choice["message"][field] = thinking
        else:
            choice["text"] = text
        kind = "chat.completion" if chat else "text_completion"
        self._send(200, {"id": "answer", "object": kind, "choices": [choice], "usage": usage})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answers: Mapping[str, str], default: str, model: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers = dict(answers)
        self.default = default
        self.model = model
        self.lock = threading.Lock()
        self.questions: list[str] = []
        self.thinking = ""
        self.reasoning_field = "reasoning_content"
        self.answer_after_thinking = True

    def reply(self, question: str) -> str:
        with self.lock:
            self.questions.append(question)
        return self.answers.get(question, self.default)


class AnswerServer:
    """The table-driven server on a free local port, on a background thread."""

    def __init__(
        self,
        answers: Mapping[str, str],
        *,
        default: str = "I do not know.",
        model: str = "answer-model",
        thinking: str = "",
        reasoning_field: Literal["reasoning_content", "reasoning", "content"] = "reasoning_content",
        answer_after_thinking: bool = True,
    ) -> None:
        self._server = _Server(answers, default, model)
        self._server.thinking = thinking
        self._server.reasoning_field = reasoning_field
        self._server.answer_after_thinking = answer_after_thinking  # the handler reads these
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host  # typeshed allows bytes
        return f"http://{host}:{port}"

    @property
    def model(self) -> str:
        return self._server.model

    @property
    def requests(self) -> list[str]:
        """The questions asked so far, in arrival order."""
        with self._server.lock:
            return list(self._server.questions)

    def __enter__(self) -> AnswerServer:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
