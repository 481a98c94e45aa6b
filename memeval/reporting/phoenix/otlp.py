"""Span dicts to OTLP protobuf over HTTP (`/v1/traces`), the wire format every collector speaks.

memeval encodes with OpenTelemetry's own OTLP encoder and posts the bytes itself, rather than
through the SDK's exporter, so a failed batch is an error it can report and resume from, not a
log line from a background retry loop. The project a span lands in is the resource attribute
`openinference.project.name`, as Phoenix reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import islice
from typing import Any

import httpx
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, TraceFlags
from opentelemetry.trace.status import Status, StatusCode

from memeval.utils.http_deadline import BoundedClient
from memeval.utils.http_retry import ReadRefused, read_whole

SCOPE = InstrumentationScope("memeval")


class ExportError(RuntimeError):
    """The collector did not take a batch (down, or it answered with an error)."""


def resource(project: str) -> Resource:
    return Resource({"service.name": "memeval", "openinference.project.name": project})


def _context(trace_id: str, span_id: str) -> SpanContext:
    return SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=False,
                       trace_flags=TraceFlags(TraceFlags.SAMPLED))


def readable(span: Mapping[str, Any], owner: Resource) -> ReadableSpan:
    parent = span.get("parent_id")
    return ReadableSpan(
        name=span["name"], context=_context(span["trace_id"], span["span_id"]),
        parent=_context(span["trace_id"], parent) if parent else None, resource=owner,
        attributes=span["attributes"], instrumentation_scope=SCOPE,
        status=Status(StatusCode.ERROR if span["status"] == "ERROR" else StatusCode.OK),
        start_time=int(span["start_ns"]), end_time=int(span["end_ns"]))


def batches(spans: Iterable[Mapping[str, Any]], size: int) -> Iterator[list[Mapping[str, Any]]]:
    iterator = iter(spans)
    while batch := list(islice(iterator, size)):
        yield batch


def export_batch(client: BoundedClient, traces_url: str, batch: list[Mapping[str, Any]],
                 project: str, *, timeout_s: float, max_bytes: int) -> None:
    """One batch of spans, its answer read under memeval's read policy (`read_whole`)."""
    owner = resource(project)
    body = encode_spans([readable(span, owner) for span in batch]).SerializeToString()
    try:
        response = read_whole(client, "POST", traces_url, timeout_s=timeout_s,
                              max_bytes=max_bytes, content=body,
                              headers={"Content-Type": "application/x-protobuf"})
    except (httpx.HTTPError, ReadRefused) as err:
        raise ExportError(f"could not reach {traces_url}: {err}") from err
    if response.status_code >= 400:
        raise ExportError(f"{traces_url} answered {response.status_code}: "
                          f"{response.text[:300]}")
