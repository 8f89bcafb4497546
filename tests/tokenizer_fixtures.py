"""A tiny byte-level BPE tokenizer trained here, and a fake /tokenize server serving it.

Shared by the load tests (token counters, workload building), so both check
against the same tokenizer and the same vLLM- / llama.cpp-shaped endpoints.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "to",
    "vi",
    "ze",
    "th",
    "ing",
    "ed",
    "é",
    "ü",
    "中",
    "文",
]


def corpus(n: int, seed: int = 0) -> Iterator[str]:
    r = random.Random(seed)
    for _ in range(n):
        words = (
            "".join(r.choice(SYLLABLES) for _ in range(r.randint(1, 3)))
            for _ in range(r.randint(3, 20))
        )
        yield " ".join(words) + r.choice([".", "!", ",", "\n", " 42"])


def train_tokenizer(vocab_size: int = 1000, bos: bool = True) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<s>", "</s>", "<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(3000), trainer)
    if bos:
        bos_id = tok.token_to_id("<s>")
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", bos_id)]
        )
    return tok


class FakeTokenizeServer:
    """vLLM- or llama.cpp-shaped /tokenize and /detokenize on loopback."""

    def __init__(
        self, tok: Any, dialect: str = "vllm", detokenize: bool = True, max_model_len: int = 4096
    ):
        self.tok, self.dialect, self.detokenize = tok, dialect, detokenize
        self.max_model_len = max_model_len
        self.requests = 0
        self.peers: set[tuple[str, int]] = set()
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # as uvicorn does; avoids 40 ms delayed-ACK stalls

            def log_message(self, *a: Any) -> None:
                pass

            def _reply(self, code: int, obj: Any) -> None:
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                data = json.loads(
                    self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}"
                )
                with outer.lock:
                    outer.requests += 1
                    outer.peers.add(self.client_address)
                code, obj = outer.handle(self.path, data)
                self._reply(code, obj)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def handle(self, path: str, data: dict) -> tuple[int, Any]:
        if self.dialect == "vllm" and path == "/tokenize":
            if "prompt" not in data:
                return 400, {"error": "field 'prompt' required"}
            ids = self.tok.encode(
                data["prompt"], add_special_tokens=data.get("add_special_tokens", True)
            ).ids
            return 200, {"tokens": ids, "count": len(ids), "max_model_len": self.max_model_len}
        if self.dialect == "vllm" and path == "/detokenize" and self.detokenize:
            return 200, {"prompt": self.tok.decode(data["tokens"], skip_special_tokens=False)}
        if self.dialect == "llama.cpp" and path == "/tokenize":
            if "content" not in data:
                return 200, {"tokens": []}  # what llama.cpp does
            ids = self.tok.encode(
                data["content"], add_special_tokens=data.get("add_special", False)
            ).ids
            return 200, {"tokens": ids}
        if self.dialect == "llama.cpp" and path == "/detokenize" and self.detokenize:
            return 200, {"content": self.tok.decode(data["tokens"], skip_special_tokens=False)}
        return 404, {"detail": "Not Found"}

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
