"""Anthropic Messages API judge (`POST {base_url}/v1/messages`), the memoryd daemon's provider."""

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
from memeval.registry import bounded

ANTHROPIC_VERSION = "2023-06-01"


@dataclass
class AnthropicJudgeConfig(HttpJudgeConfig):
    """Prices default to Claude Haiku 4.5 list prices (USD per million tokens): change them
    together with `model`, or the reported cost is for the wrong model."""

    model: str = "claude-haiku-4-5"
    base_url: str = "https://api.anthropic.com"
    api_key_env: str | None = "ANTHROPIC_API_KEY"
    price_input_per_mtok: float = bounded(1.0, 0)
    price_output_per_mtok: float = bounded(5.0, 0)

    def validate(self) -> None:
        super().validate()
        if not self.api_key_env:
            raise ValueError("api_key_env must name the variable holding the Anthropic API key")


class AnthropicJudge(HttpJudge):
    provider = "anthropic"

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": ANTHROPIC_VERSION, "content-type": "application/json"}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def body(self, system: str, user: str, max_tokens: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.cfg.model,
            "max_tokens": max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        if self.cfg.temperature is not None:
            body["temperature"] = self.cfg.temperature
        return body

    def extract(self, data: Any) -> tuple[str, int, int]:
        """Joins the `text` blocks of `content`; other blocks (thinking, tool use) are ignored."""
        blocks = data["content"]
        if not isinstance(blocks, list):
            raise TypeError("'content' is not a list")
        text = "".join(
            str(block.get("text", ""))
            for block in blocks
            if isinstance(block, dict) and block.get("type", "text") == "text"
        )
        tin, tout = usage_tokens(data.get("usage"), "input_tokens", "output_tokens")
        return text, tin, tout


@JUDGES.register("anthropic", AnthropicJudgeConfig)
def build_anthropic(cfg: AnthropicJudgeConfig, **deps: Any) -> AnthropicJudge:
    return build_with_deps(AnthropicJudge, cfg, deps)
