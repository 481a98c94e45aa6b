"""The slice of Phoenix's REST API (`/v1/...`) memeval pushes a run through, over plain httpx.

memeval never imports the `phoenix` package: with the server installed, that import alone costs
about 10 s and 400 MB, in every run. The REST API is what Phoenix's own client calls.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import httpx

from memeval.reporting.phoenix.otlp import ExportError
from memeval.utils.bounded_json import parse_json
from memeval.utils.http_deadline import BoundedClient
from memeval.utils.http_retry import MAX_BODY_BYTES, ReadRefused, read_whole

CONCURRENCY = 8  # requests a push keeps in flight: Phoenix answers each in a few milliseconds

# httpx logs every request at INFO: thousands of lines per push, drowning the run's own output.
logging.getLogger("httpx").setLevel(logging.WARNING)


class PhoenixError(ExportError):
    """Phoenix refused or failed a request; the message carries its answer."""


def _json(response: httpx.Response) -> Any:
    """An answer's JSON, refused in one line when nested too deep or holding NaN."""
    try:
        return parse_json(response.content)
    except ValueError as err:
        raise PhoenixError(f"Phoenix answered JSON memeval will not read: {err}") from None


class PhoenixREST:
    """Every request under memeval's one read policy (`read_whole`): the whole answer within
    `timeout_s`, at most `max_body_bytes` of it."""

    def __init__(self, base_url: str, timeout_s: float,
                 max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.base_url = base_url
        self.timeout_s, self.max_body_bytes = timeout_s, max_body_bytes
        self.http = BoundedClient(base_url=base_url, timeout=timeout_s)

    def close(self) -> None:
        self.http.close()

    def healthy(self) -> bool:
        try:
            return read_whole(self.http, "GET", "/healthz", timeout_s=min(2.0, self.timeout_s),
                              max_bytes=self.max_body_bytes).status_code == 200
        except (httpx.HTTPError, ReadRefused):
            return False

    def _call(self, method: str, path: str, ok: Sequence[int] = (200,),
              **kwargs: Any) -> httpx.Response:
        try:
            response = read_whole(self.http, method, path, timeout_s=self.timeout_s,
                                  max_bytes=self.max_body_bytes, **kwargs)
        except (httpx.HTTPError, ReadRefused) as err:
            raise PhoenixError(f"{method} {self.base_url}{path}: {err}") from err
        if response.status_code not in ok:
            raise PhoenixError(f"{method} {self.base_url}{path} answered "
                               f"{response.status_code}: {response.text[:300]}")
        return response

    def _pages(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        cursor = None
        while True:
            query = {**params, **({"cursor": cursor} if cursor else {})}
            body = _json(self._call("GET", path, params=query))
            yield from body["data"]
            cursor = body.get("next_cursor")
            if not cursor:
                return

    # spans and annotations
    def present_span_ids(self, project: str, span_ids: Sequence[str]) -> set[str]:
        """Which of these spans Phoenix has ingested (ingestion is asynchronous)."""
        response = self._call("GET", f"/v1/projects/{project}/spans", ok=(200, 404),
                              params={"span_id": list(span_ids), "limit": len(span_ids)})
        if response.status_code == 404:  # the project does not exist yet
            return set()
        return {span["context"]["span_id"] for span in _json(response)["data"]}

    def annotate_spans(self, annotations: Sequence[Mapping[str, Any]]) -> None:
        """Upserts: an annotation with the same name, span and identifier is replaced."""
        self._call("POST", "/v1/span_annotations", params={"sync": "true"},
                   json={"data": list(annotations)})

    def annotate_traces(self, annotations: Sequence[Mapping[str, Any]]) -> None:
        """Upserts by name, trace and identifier, like span annotations. The traces table's
        annotation columns read a trace's annotations, not its root span's."""
        self._call("POST", "/v1/trace_annotations", params={"sync": "true"},
                   json={"data": list(annotations)})

    def annotate_documents(self, annotations: Sequence[Mapping[str, Any]]) -> None:
        """A retriever span's documents' evaluations (Phoenix computes nDCG, precision and hit
        from them); upserted by name, span and position."""
        self._call("POST", "/v1/document_annotations", params={"sync": "true"},
                   json={"data": list(annotations)})

    # annotation configs: an evaluation's direction (which way is better) and bounds
    def annotation_config_names(self) -> set[str]:
        return {c["name"] for c in self._pages("/v1/annotation_configs", limit=1000)}

    def create_annotation_config(self, config: Mapping[str, Any]) -> None:
        self._call("POST", "/v1/annotation_configs", json=dict(config))

    # datasets
    def dataset_id(self, name: str) -> str | None:
        return next((d["id"] for d in self._pages("/v1/datasets", name=name)
                     if d["name"] == name), None)

    def create_dataset(self, name: str, description: str, examples: Sequence[Mapping[str, Any]],
                       ) -> str:
        body = {"action": "create", "name": name, "description": description,
                **{f"{key}s": [e[key] for e in examples] for key in ("input", "output")},
                "metadata": [e["metadata"] for e in examples],
                "example_ids": [e["id"] for e in examples]}
        response = self._call("POST", "/v1/datasets/upload", params={"sync": "true"}, json=body)
        return str(_json(response)["data"]["dataset_id"])

    def delete_dataset(self, dataset_id: str) -> None:
        self._call("DELETE", f"/v1/datasets/{dataset_id}", ok=(200, 204))

    def example_node_ids(self, dataset_id: str) -> dict[str, str]:
        """Our stable example id -> the id Phoenix's experiment API wants (its node id)."""
        body = _json(self._call("GET", f"/v1/datasets/{dataset_id}/examples"))
        return {e["id"]: e["node_id"] for e in body["data"]["examples"]}

    # experiments
    def experiments(self, dataset_id: str) -> list[dict[str, Any]]:
        return list(self._pages(f"/v1/datasets/{dataset_id}/experiments"))

    def create_experiment(self, dataset_id: str, name: str, description: str,
                          metadata: Mapping[str, Any]) -> str:
        response = self._call("POST", f"/v1/datasets/{dataset_id}/experiments",
                              json={"name": name, "description": description,
                                    "metadata": dict(metadata)})
        return str(_json(response)["data"]["id"])

    def update_experiment(self, experiment_id: str, name: str, description: str,
                          metadata: Mapping[str, Any]) -> None:
        self._call("PATCH", f"/v1/experiments/{experiment_id}",
                   json={"name": name, "description": description, "metadata": dict(metadata)})

    def experiment_runs(self, experiment_id: str) -> dict[str, str]:
        """dataset example node id -> run id, for the runs already recorded."""
        return {run["dataset_example_id"]: run["id"]
                for run in self._pages(f"/v1/experiments/{experiment_id}/runs")}

    def missing_evaluations(self, experiment_id: str, names: Sequence[str]
                            ) -> dict[str, set[str]]:
        """Run id -> which of these evaluations it lacks (or failed), for the runs lacking any."""
        return {item["experiment_run"]["id"]: set(item["evaluation_names"])
                for item in self._pages(f"/v1/experiments/{experiment_id}/incomplete-evaluations",
                                        evaluation_name=list(names), limit=1000)}

    def create_run(self, experiment_id: str, run: Mapping[str, Any]) -> str:
        response = self._call("POST", f"/v1/experiments/{experiment_id}/runs", json=dict(run))
        return str(_json(response)["data"]["id"])

    def evaluate(self, evaluation: Mapping[str, Any]) -> None:
        """Upserts by (run, name)."""
        self._call("POST", "/v1/experiment_evaluations", json=dict(evaluation))
