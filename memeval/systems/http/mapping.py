"""`system=http`'s settings: where a memory daemon lives and how its requests and answers map onto
memeval's (memeval/conf/system/http.yaml holds memoryd's API as the preset).

Every route is a path relative to `base_url`; a route with an empty path is not mapped, and the
system claims only the capabilities its mapped routes can serve. Paths are checked here, before
any request: an absolute URL or a path that would leave `base_url` is refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from memeval.metrics.gate_metrics import OUTCOMES
from memeval.registry import bounded
from memeval.systems.base import Capability

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
BODY_METHODS = ("POST", "PUT", "PATCH")
ID_PLACEHOLDER = "{id}"
# Anything that could turn a relative path into another address or climb out of base_url.
_ESCAPES = re.compile(r"(^|/)\.{1,2}(/|$)|%2e|%2f|%5c|[\\?#@\s]|://|^//", re.IGNORECASE)


def _memoryd_stages() -> dict[str, str]:
    return {"pre_filter": "prefilter", "length_filter": "length",
            "content_score_filter": "content_score", "synthesizer_skip": "judge",
            "noise_filtered": "noise_check", "stored": "stored", "no_synthesizer": "stored"}


@dataclass
class Route:
    """One daemon endpoint: `path` relative to base_url ("" = not mapped) and its method."""

    path: str = ""
    method: str = "POST"

    @property
    def mapped(self) -> bool:
        return bool(self.path)

    def check(self, key: str, *, body: bool, placeholder: bool = False) -> None:
        if not self.mapped:
            return
        if self.method not in METHODS:
            raise ValueError(f"{key}.method must be one of {', '.join(METHODS)} "
                             f"(got {self.method!r})")
        if body and self.method not in BODY_METHODS:
            raise ValueError(f"{key}.method must send a body: one of {', '.join(BODY_METHODS)} "
                             f"(got {self.method!r})")
        if _ESCAPES.search(self.path):
            raise ValueError(f"{key}.path must be a path relative to system.base_url, such as "
                             f"/api/ingest (got {self.path!r}: no scheme, host, '..', query or "
                             f"fragment)")
        if placeholder != (ID_PLACEHOLDER in self.path):
            raise ValueError(f"{key}.path {'must' if placeholder else 'must not'} hold "
                             f"{ID_PLACEHOLDER} (got {self.path!r})")
        if re.search(r"[{}]", self.path.replace(ID_PLACEHOLDER, "")):
            raise ValueError(f"{key}.path may hold no braces but {ID_PLACEHOLDER} "
                             f"(got {self.path!r})")


@dataclass
class IngestRoute(Route):
    """One agent turn in, the daemon's verdict out.

    `stages` maps each stage name the daemon answers onto memeval's outcomes; `judge_stages`
    are the daemon stages reached only after its judge ran (they count as judge calls);
    `stored_field` ("" when the daemon sends none) is the stored flag: a stage mapped to
    `stored` that comes back not stored is `not_stored` (memoryd: a duplicate). `fields` are
    sent unchanged with every turn."""

    path: str = "/api/ingest"
    prompt_field: str = "user_prompt"
    response_field: str = "assistant_response"
    fields: dict[str, Any] = field(default_factory=lambda: {"source": "memeval"})
    stage_field: str = "stage"
    stored_field: str = "stored"
    stages: dict[str, str] = field(default_factory=_memoryd_stages)
    judge_stages: list[str] = field(
        default_factory=lambda: ["synthesizer_skip", "noise_filtered", "stored"])
    not_stored: str = "dedup"

    def check_mapping(self, key: str) -> None:
        for name in ("prompt_field", "response_field", "stage_field"):
            if not getattr(self, name).strip():
                raise ValueError(f"{key}.{name} must name a field")
        clash = {self.prompt_field, self.response_field} & set(self.fields)
        if clash or self.prompt_field == self.response_field:
            raise ValueError(f"{key}.fields and the text fields must not share a name "
                             f"({', '.join(sorted(clash)) or self.prompt_field})")
        unknown = {f"{stage}: {outcome}" for stage, outcome in self.stages.items()
                   if outcome not in OUTCOMES}
        if unknown or self.not_stored not in OUTCOMES:
            raise ValueError(f"{key}.stages and {key}.not_stored map onto memeval's outcomes "
                             f"({', '.join(OUTCOMES)}); got "
                             f"{', '.join(sorted(unknown)) or self.not_stored}")
        if not self.stages:
            raise ValueError(f"{key}.stages must map the daemon's stage names")
        missing = [stage for stage in self.judge_stages if stage not in self.stages]
        if missing:
            raise ValueError(f"{key}.judge_stages names stages {key}.stages does not map: "
                             f"{', '.join(missing)}")


@dataclass
class ListRoute(Route):
    """A GET answering a JSON list, at `list_field` (a dotted path; "" = the whole answer)."""

    method: str = "GET"
    list_field: str = ""


@dataclass
class MemoriesRoute(ListRoute):
    path: str = "/api/memories"
    id_field: str = "id"


@dataclass
class DeleteRoute(Route):
    path: str = "/api/memories/{id}"
    method: str = "DELETE"


@dataclass
class RejectionsRoute(ListRoute):
    path: str = "/api/rejections"


@dataclass
class SearchRoute(Route):
    """memoryd answers `{context, scores}` with no memory ids: search is claimed only when
    `ids_field` names a list of ids parallel to `scores_field` (and `index` is mapped)."""

    path: str = "/api/search"
    query_field: str = "query"
    ids_field: str = ""
    scores_field: str = "scores"


@dataclass
class IndexRoute(Route):
    """One memory in, sent with the experiment's id, which the daemon must answer searches with
    (memoryd's /api/store keeps no caller id, so the preset leaves this unmapped)."""

    text_field: str = "content"
    id_field: str = "id"


@dataclass
class HttpSystemConfig:
    """A memory daemon over HTTP. Requests go only to `base_url` (no redirects are followed);
    `max_concurrency` turns in flight at once (1: each verdict may change what the next turn
    meets, as in an agent's session); `breaker_after` failed turns in a row and nothing more is
    sent this run (0: never); more than `max_error_share` of the turns without a verdict and the
    run fails once its results are written. A daemon not yet listening (connection refused) is
    waited for up to `startup_wait_s` before the preflight, so it can be started alongside."""

    base_url: str = "http://127.0.0.1:8765"
    api_key_env: str | None = None
    timeout_s: float = bounded(30.0, above=0)
    max_retries: int = bounded(3, 0, 100)
    backoff_max_s: float = bounded(10.0, above=0)
    max_body_mb: float = bounded(64.0, above=0)  # an answer larger than this is refused
    max_list_pages: int = bounded(100, 1)  # list-and-delete rounds in one wipe
    max_concurrency: int = bounded(1, 1, 256)
    breaker_after: int = bounded(5, 0)
    max_error_share: float = bounded(0.05, 0, 1)
    preflight: bool = True
    startup_wait_s: float = bounded(60.0, 0, 3600)
    ingest: IngestRoute = field(default_factory=IngestRoute)
    memories: MemoriesRoute = field(default_factory=MemoriesRoute)
    delete: DeleteRoute = field(default_factory=DeleteRoute)
    rejections: RejectionsRoute = field(default_factory=RejectionsRoute)
    restart: Route = field(default_factory=Route)
    search: SearchRoute = field(default_factory=SearchRoute)
    index: IndexRoute = field(default_factory=IndexRoute)

    def validate(self) -> None:
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL with a host "
                             f"(got {self.base_url!r})")
        if parts.query or parts.fragment:
            raise ValueError(f"base_url must have no query or fragment (got {self.base_url!r})")
        for key, route, body in (("ingest", self.ingest, True), ("memories", self.memories, False),
                                 ("rejections", self.rejections, False),
                                 ("restart", self.restart, True), ("search", self.search, True),
                                 ("index", self.index, True)):
            route.check(f"system.{key}", body=body)
        self.delete.check("system.delete", body=False, placeholder=True)
        if self.ingest.mapped:
            self.ingest.check_mapping("system.ingest")

    @property
    def capabilities(self) -> frozenset[Capability]:
        """What the mapped routes can serve; freezing learning never (a daemon cannot)."""
        found = set()
        if self.ingest.mapped:
            found.add(Capability.INGEST)
        if self.memories.mapped and self.delete.mapped:
            found.add(Capability.RESET)
            if self.index.mapped and self.search.mapped and self.search.ids_field:
                found.add(Capability.SEARCH)
        return frozenset(found)


def pluck(data: Any, path: str) -> Any:
    """The value at a dotted `path` ("" = `data` itself); KeyError when it is not there."""
    for part in filter(None, path.split(".")):
        if not isinstance(data, Mapping) or part not in data:
            raise KeyError(path)
        data = data[part]
    return data
