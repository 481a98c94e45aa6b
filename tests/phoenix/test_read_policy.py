"""Phoenix's clients read under memeval's one read policy: a stalling, huge or hostile answer ends
the request (the run goes on, its results on disk) instead of hanging it. Loopback only."""

from __future__ import annotations

import time

import pytest

from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.otlp import ExportError, export_batch
from memeval.reporting.phoenix.rest import PhoenixError, PhoenixREST
from memeval.reporting.phoenix.stream import reachable
from memeval.utils.http_deadline import BoundedClient
from tests.loopback import LoopbackServer, Reply


def test_a_healthz_that_trickles_is_not_healthy_and_does_not_hang_the_start() -> None:
    stalling = Reply(200, {"status": "ok", "pad": "x" * 100}, trickle_s=0.5)
    with LoopbackServer(lambda _: stalling) as server:
        started = time.monotonic()
        assert not reachable(PhoenixConfig(endpoint=server.base_url, timeout_s=1.0))
        assert time.monotonic() - started < 4.0  # the answer would take 60 s


@pytest.mark.parametrize(("reply", "said"), [
    (Reply(200, text='{"data": {"dataset_id": NaN}}'), "NaN where JSON allows only numbers"),
    (Reply(200, text='{"data": ' * 70 + "1" + "}" * 70), "nested deeper than 64 levels"),
    (Reply(200, {"data": {"dataset_id": "x" * 5000}}), "an answer larger than 1000 bytes"),
], ids=["nan", "deep", "huge"])
def test_a_hostile_rest_answer_is_one_phoenix_error(reply: Reply, said: str) -> None:
    with LoopbackServer(lambda _: reply) as server:
        rest = PhoenixREST(server.base_url, 2.0, max_body_bytes=1000)
        try:
            with pytest.raises(PhoenixError, match=said):
                rest.example_node_ids("d1")
        finally:
            rest.close()


def test_a_span_export_whose_answer_trickles_ends_at_the_deadline() -> None:
    stalling = Reply(200, {"partialSuccess": {}, "pad": "x" * 100}, trickle_s=0.2)
    with LoopbackServer(lambda _: stalling) as server, BoundedClient() as client:
        started = time.monotonic()
        with pytest.raises(ExportError, match=r"no whole answer within 0\.5 s"):
            export_batch(client, f"{server.base_url}/v1/traces", [], "memeval", timeout_s=0.5,
                         max_bytes=10_000)
        assert time.monotonic() - started < 3.0
