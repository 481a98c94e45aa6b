"""`system=http`'s settings: where a memory daemon lives and how its requests and answers map onto
memeval's (memeval/conf/system/http.yaml holds memoryd's API as the preset).

Every route is a path relative to `base_url`; a route with an empty path is not mapped, and the
system claims only the capabilities its mapped routes can serve. Paths are checked here, before
any request: an absolute URL or a path that would leave `base_url` is refused.

A field of an answer is a dotted path (`result.stage`); `[]` steps into each object of a list
(`results[].id`). A value read as a stage name keeps its JSON spelling: a daemon answering
`"stored": true` as its stage maps it under `"true"`. `mapping` names a YAML file of these
settings, merged over the preset, so a daemon's mapping can live beside its code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from memeval.metrics.gate_metrics import OUTCOMES
from memeval.registry import bounded
from memeval.systems.base import Capability
from memeval.systems.boundary import CallLimits

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
    `stored` that comes back not stored is `not_stored` (memoryd: a duplicate). A daemon that
    answers no stage (`stage_field` "") is read by its stored flag alone: stored, or `dropped`.
    `prompt_field` "" sends no prompt. `fields` are sent unchanged with every turn."""

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
    dropped: str = "judge"  # no stage field: a turn not stored was dropped here

    def check_mapping(self, key: str) -> None:
        if not self.response_field.strip():
            raise ValueError(f"{key}.response_field must name a field")
        if not (self.stage_field.strip() or self.stored_field.strip()):
            raise ValueError(f"{key}.stage_field or {key}.stored_field must name a field of the "
                             f"answer: memeval reads the verdict from them")
        clash = {self.prompt_field, self.response_field} & set(self.fields)
        if clash or self.prompt_field == self.response_field:
            raise ValueError(f"{key}.fields and the text fields must not share a name "
                             f"({', '.join(sorted(clash)) or self.prompt_field})")
        unknown = {f"{stage}: {outcome}" for stage, outcome in self.stages.items()
                   if outcome not in OUTCOMES}
        odd = [o for o in (self.not_stored, self.dropped) if o not in OUTCOMES]
        if unknown or odd:
            raise ValueError(f"{key}.stages, {key}.not_stored and {key}.dropped map onto "
                             f"memeval's outcomes ({', '.join(OUTCOMES)}); got "
                             f"{', '.join(sorted(unknown) or odd)}")
        if self.stage_field and not self.stages:
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
    `ids_field` names the ids, parallel to `scores_field` (and `index` is mapped): two lists
    (`ids`, `scores`), or fields of each result (`results[].id`, `results[].score`).
    `k_field` names the field the number of results asked for is sent in ("": not sent, and
    the daemon's own top N is all a search can serve)."""

    path: str = "/api/search"
    query_field: str = "query"
    ids_field: str = ""
    scores_field: str = "scores"
    k_field: str = ""

    def body(self, query: str, k: int) -> dict[str, Any]:
        return {self.query_field: query, **({self.k_field: k} if self.k_field else {})}


@dataclass
class IndexRoute(Route):
    """One memory in, sent with the experiment's id, which the daemon must answer searches with
    (memoryd's /api/store keeps no caller id, so the preset leaves this unmapped)."""

    text_field: str = "content"
    id_field: str = "id"


@dataclass
class HttpSystemConfig(CallLimits):
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
    mapping: str | None = None  # a YAML file of these settings, merged over the ones above

    def validate(self) -> None:
        if self.mapping:
            self._merge(self.mapping)
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

    def _merge(self, path: str) -> None:
        """The file's settings over these, then checked like the rest: a route's settings merge
        into the preset's route, a map or list (stages, fields) replaces the preset's."""
        from memeval.registry import to_dataclass

        try:
            loaded = yaml.safe_load(Path(path).expanduser().read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as err:
            raise ValueError(f"mapping {path}: {err}") from None
        if not isinstance(loaded, dict):
            raise ValueError(f"mapping {path}: not a YAML mapping of system=http settings")
        loaded.pop("name", None)
        loaded.pop("mapping", None)
        params = {**_overlay(self, loaded, f"mapping {path}"), "mapping": None}  # merged once
        merged = to_dataclass(HttpSystemConfig, params, f"mapping {path}")
        _replace_maps(merged, loaded)  # checking merged the file's maps into the preset's
        merged.validate()
        for item in fields(self):
            if item.name != "mapping":
                setattr(self, item.name, getattr(merged, item.name))

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


def _overlay(current: Any, data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """`current`'s settings as plain data with `data` laid over them: into a nested route
    setting by setting, any other value replaced whole."""
    plain = {f.name: getattr(current, f.name) for f in fields(current)}
    for key, value in data.items():
        if key not in plain:
            raise ValueError(f"{where}: unknown setting {key!r} (settings: "
                             f"{', '.join(sorted(plain))})")
        now = plain[key]
        plain[key] = _overlay(now, value, f"{where}: {key}") \
            if is_dataclass(now) and isinstance(value, dict) else value
    return {k: asdict(v) if is_dataclass(v) and not isinstance(v, type) else v
            for k, v in plain.items()}


def _replace_maps(obj: Any, data: Mapping[str, Any]) -> None:
    for key, value in data.items():
        now = getattr(obj, key)
        if is_dataclass(now) and isinstance(value, dict):
            _replace_maps(now, value)
        elif isinstance(value, dict | list):
            setattr(obj, key, value)


def pluck(data: Any, path: str) -> Any:
    """The value at a dotted `path` ("" = `data` itself), a list of values when the path steps
    into a list with `[]` (`results[].id`); KeyError when it is not there."""
    head, into, rest = path.partition("[]")
    for part in filter(None, head.split(".")):
        if not isinstance(data, Mapping) or part not in data:
            raise KeyError(path)
        data = data[part]
    if not into:
        return data
    if not isinstance(data, list):
        raise KeyError(path)
    return [pluck(item, rest.lstrip(".")) for item in data]


def as_key(value: Any) -> str:
    """A value as a mapping key: text as it is, anything else in its JSON spelling (true, 3)."""
    return value if isinstance(value, str) else json.dumps(value)
