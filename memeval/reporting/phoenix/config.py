"""Where and how a run reports to Phoenix; validated with the rest of the config, up front."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from memeval.registry import bounded


@dataclass
class PhoenixConfig:
    """`endpoint` is Phoenix's base URL (a trailing `/v1/traces` is accepted); null or empty
    means "write the files, export nothing". `enabled: false` skips even the files."""

    enabled: bool = True
    endpoint: str | None = "http://127.0.0.1:6006"
    project: str = "memeval"
    text_chars: int = bounded(2000, 0)
    timeout_s: float = bounded(60.0, above=0)  # for each whole answer
    max_body_mb: float = bounded(64.0, above=0)  # an answer larger than this is refused
    batch_spans: int = bounded(1000, 1)

    def validate(self) -> None:
        if self.endpoint:
            parsed = urlparse(self.base_url or "")
            if parsed.scheme not in ("http", "https") or not parsed.netloc:
                raise ValueError(f"reporting.phoenix.endpoint must be an http(s) URL such as "
                                 f"http://127.0.0.1:6006, got '{self.endpoint}'")
        if not self.project.strip():
            raise ValueError("reporting.phoenix.project must not be empty")
        if self.text_chars < 0 or self.timeout_s <= 0 or self.batch_spans < 1:
            raise ValueError("reporting.phoenix: text_chars >= 0, timeout_s > 0, batch_spans >= 1")

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 2**20)

    @property
    def base_url(self) -> str | None:
        """The server root, whichever form the endpoint was given in."""
        if not self.endpoint:
            return None
        url = self.endpoint.rstrip("/")
        return url.removesuffix("/v1/traces")
