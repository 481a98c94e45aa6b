"""OpenAI-compatible chat-completions judge: OpenAI itself, or a local llama.cpp/vLLM server.

The default base_url is a llama.cpp `llama-server` on loopback, so judging can run offline; the
API key is optional because local servers usually take none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memeval.backends.judges.base import JUDGES
from memeval.backends.judges.http_judge import (
    HttpJudge,
    HttpJudgeConfig,
    build_with_deps,
    usage_tokens,
)


@dataclass
class OpenAIChatJudgeConfig(HttpJudgeConfig):
    model: str = "local"
    base_url: str = "http://127.0.0.1:8080/v1"
    api_key_env: str | None = None


class OpenAIChatJudge(HttpJudge):
    provider = "openai_chat"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        return headers

    def body(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.cfg.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "max_tokens": max_tokens,
        }
        if self.cfg.temperature is not None:
            body["temperature"] = self.cfg.temperature
        return body

    def extract(self, data: Any) -> tuple[str, int, int]:
        content = data["choices"][0]["message"]["content"]
        text = "" if content is None else str(content)
        tin, tout = usage_tokens(data.get("usage"), "prompt_tokens", "completion_tokens")
        return text, tin, tout


@JUDGES.register("openai_chat", OpenAIChatJudgeConfig)
def build_openai_chat(cfg: OpenAIChatJudgeConfig, **deps: Any) -> OpenAIChatJudge:
    return build_with_deps(OpenAIChatJudge, cfg, deps)
