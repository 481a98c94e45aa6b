"""A run pushed to a real Phoenix on loopback: spans, annotations, dataset, experiments, secrets,
re-pushes, and Phoenix being down before or during a push."""

from __future__ import annotations

import contextlib
import io
import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

from memeval.config import compose
from memeval.paths import data_path
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.files import PHOENIX_DIR, SPANS, read_jsonl
from memeval.reporting.phoenix.push import push_run, report_run
from memeval.reporting.phoenix.rest import PhoenixError, PhoenixREST
from memeval.reporting.phoenix.server import free_port
from memeval.reporting.phoenix.stream import PassStreamer
from memeval.results.run_dir import read_decisions, read_table
from memeval.runner import run_experiment
from tests.loopback import LoopbackServer, Received, Reply

CORPORA = Path(__file__).resolve().parents[1] / "data" / "corpora"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "phoenix.md"

pytestmark = pytest.mark.integration

# a model Phoenix has prices for, as memeval/conf/judge/anthropic.yaml
JUDGE_MODEL = "claude-haiku-4-5"

SECRETS = ("AKIAZ7QF3X2KJ4LM5NPQ", "sk-ant-api03-" + "Q" * 48, "dana.leaker@example.org")
PLANTED = [
    {"user_prompt": f"deploy with key {SECRETS[0]} please",
     "assistant_response": "Configured the deploy: the CI job reads AWS_ACCESS_KEY_ID="
     f"{SECRETS[0]} and the Anthropic key {SECRETS[1]}; alerts go to {SECRETS[2]} because the "
     "on-call rotation changed last week and the pager integration was removed.",
     "label": "substantive"},
    {"user_prompt": f"who owns this? mail {SECRETS[2]}",
     "assistant_response": f"ok, {SECRETS[2]}", "label": "noise"},
]


def labelled_file(folder: Path, rows: int = 50) -> Path:
    bundled = Path(data_path("labeled/write_gate_v1.jsonl")).read_text().splitlines()[:rows]
    path = folder / "labels.jsonl"
    path.write_text("\n".join([*bundled, *(json.dumps(r) for r in PLANTED)]) + "\n")
    return path


def config(folder: Path, endpoint: str, project: str, *extra: str) -> Any:
    return compose(["+experiment=three_pass", "embedder=hashing", "dataset=labeled_jsonl",
                    f"dataset.path={labelled_file(folder)}", f"cache_dir={folder / 'cache'}",
                    "progress=false", "plots=false", "bootstrap=50",
                    f"reporting.phoenix.endpoint={endpoint}",
                    f"reporting.phoenix.project={project}", *extra])


def pages(client: httpx.Client, path: str, **params: Any) -> Iterator[dict[str, Any]]:
    cursor = None
    while True:
        body = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        body.raise_for_status()
        data = body.json()
        yield from data["data"]
        cursor = data.get("next_cursor")
        if not cursor:
            return


def run_spans(client: httpx.Client, project: str, run_id: str, *filters: str) -> list[dict]:
    attributes = [f"memeval.run_id:{run_id}", *filters]
    return list(pages(client, f"/v1/projects/{project}/spans", attribute=attributes,
                      limit=1000))


def annotations_of(client: httpx.Client, project: str, span_ids: list[str]) -> list[dict]:
    found: list[dict] = []
    for start in range(0, len(span_ids), 100):
        found += pages(client, f"/v1/projects/{project}/span_annotations",
                       span_ids=span_ids[start:start + 100], limit=1000)
    return found


def experiments_of(client: httpx.Client, run_id: str) -> list[dict]:
    return [e for d in pages(client, "/v1/datasets") for e in
            pages(client, f"/v1/datasets/{d['id']}/experiments")
            if (e.get("metadata") or {}).get("memeval_run_id") == run_id]


def graphql(client: httpx.Client, query: str, **variables: Any) -> dict[str, Any]:
    """What Phoenix's UI reads (its GraphQL API), e.g. an experiment's evaluation means."""
    response = client.post("/graphql", json={"query": query, "variables": variables})
    response.raise_for_status()
    body = response.json()
    assert not body.get("errors"), body["errors"]
    return dict(body["data"])


def anthropic_judge(request: Received) -> Reply:
    """Anthropic's Messages API, stood in for on loopback: keeps the longer turns, skips the
    short ones, and bills tokens in proportion to what it was sent."""
    text = str(request.body["messages"][-1]["content"])
    verdict = f"Remember: {text[-160:]}" if len(text) > 1200 else "SKIP"
    return Reply(200, {"id": "msg_01", "type": "message", "role": "assistant",
                       "model": JUDGE_MODEL, "content": [{"type": "text", "text": verdict}],
                       "stop_reason": "end_turn", "stop_sequence": None,
                       "usage": {"input_tokens": len(text) // 4, "output_tokens": 40}})


@pytest.fixture(scope="module")
def pushed(phoenix_url: str, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[Path, dict[str, Any], str, httpx.Client]]:
    """A three-pass run judged over HTTP (a stand-in Anthropic on loopback), pushed at its end."""
    folder = tmp_path_factory.mktemp("pushed")
    project = f"memeval-test-{uuid.uuid4().hex[:8]}"
    with pytest.MonkeyPatch.context() as env, LoopbackServer(anthropic_judge) as judge:
        env.setenv("ANTHROPIC_API_KEY", "sk-loopback-test")
        metrics = run_experiment(config(folder, phoenix_url, project, "judge=anthropic",
                                        f"judge.base_url={judge.base_url}",
                                        f"judge.model={JUDGE_MODEL}"), folder / "run")
    with httpx.Client(base_url=phoenix_url, timeout=30) as client:
        yield folder / "run", metrics, project, client


def test_the_run_was_pushed_at_its_end(pushed: tuple) -> None:
    run_dir, metrics, project, _ = pushed
    record = json.loads((run_dir / PHOENIX_DIR / "push.json").read_text())
    lines = sum(1 for _ in read_jsonl(run_dir / PHOENIX_DIR / SPANS))
    assert record["run_id"] == metrics["run_id"] and record["project"] == project
    assert record["spans"] == lines > 0 and record["spans_per_s"] > 0


def test_spans_arrive_and_are_queryable_by_attribute(pushed: tuple) -> None:
    run_dir, metrics, project, client = pushed
    decisions = read_decisions(run_dir)
    every = run_spans(client, project, metrics["run_id"])
    assert len(every) == sum(1 for _ in read_jsonl(run_dir / PHOENIX_DIR / SPANS))
    roots = [s for s in every if s["name"].startswith("gate p")]
    assert len(roots) == len(decisions)
    assert {s["attributes"]["session.id"] for s in every} == {
        f"three_pass run {metrics['run_id'][:8]}"}  # Phoenix's Sessions list a run apart
    judged = run_spans(client, project, metrics["run_id"], "memeval.stage:judge")
    assert len(judged) == int(decisions["judge_called"].sum()) > 0
    assert {s["span_kind"] for s in judged} == {"LLM"}
    pass_two = run_spans(client, project, metrics["run_id"], "memeval.pass_no:2",
                         "memeval.stage:content_score")
    assert pass_two and all(s["attributes"]["memeval.pass_no"] == 2 for s in pass_two)


# Each span filter docs/phoenix.md documents, and which of a run's spans it must find.
FILTERS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "memeval.pass_no == 2": lambda a: a.get("memeval.pass_no") == 2,
    "memeval.stage == 'judge'": lambda a: a.get("memeval.stage") == "judge",
    "memeval.decision == 'reject'": lambda a: a.get("memeval.decision") == "reject",
    "memeval.label == 'substantive' and memeval.retained == False":
        lambda a: a.get("memeval.label") == "substantive" and a.get("memeval.retained") is False,
    "span_kind == 'LLM'": lambda a: a["openinference.span.kind"] == "LLM",
}
SPANS_FOUND = """query ($project: ID!, $condition: String!, $after: String) {
  node(id: $project) { ... on Project {
    spans(first: 1000, after: $after, filterCondition: $condition) {
      edges { node { spanId } } pageInfo { hasNextPage endCursor } } } } }"""


def filtered(client: httpx.Client, project: str, condition: str) -> set[str]:
    """The span ids Phoenix's span filter (its UI's search box) finds in the project."""
    project_id = client.get(f"/v1/projects/{project}").json()["data"]["id"]
    found: set[str] = set()
    after = None
    while True:
        page = graphql(client, SPANS_FOUND, project=project_id, condition=condition,
                       after=after)["node"]["spans"]
        found |= {edge["node"]["spanId"] for edge in page["edges"]}
        if not page["pageInfo"]["hasNextPage"]:
            return found
        after = page["pageInfo"]["endCursor"]


@pytest.mark.parametrize("condition", list(FILTERS))
def test_each_documented_filter_finds_its_spans_in_phoenix(pushed: tuple, condition: str
                                                           ) -> None:
    run_dir, metrics, project, client = pushed
    assert f"`{condition}`" in DOCS.read_text()
    spans = list(read_jsonl(run_dir / PHOENIX_DIR / SPANS))
    expected = {s["span_id"] for s in spans if FILTERS[condition](s["attributes"])}
    run = f"memeval.run_id == '{metrics['run_id']}'"
    assert f"`{run.replace(metrics['run_id'], 'RUN_ID')}`" in DOCS.read_text()
    assert filtered(client, project, f"{run} and {condition}") == expected != set()
    assert filtered(client, project, run) == {s["span_id"] for s in spans}


def test_annotations_mark_each_decision_on_its_own_spans(pushed: tuple) -> None:
    run_dir, metrics, project, client = pushed
    decisions = read_decisions(run_dir).set_index(["pass_no", "entry_id"])
    roots = run_spans(client, project, metrics["run_id"], "memeval.pass_no:1")
    roots = [s for s in roots if s["name"] == "gate p1"]
    notes = annotations_of(client, project, [s["context"]["span_id"] for s in roots])
    by_span = {n["span_id"]: n for n in notes if n["name"] == "gate decision"}
    assert len(by_span) == len(roots)
    for span in roots:
        decision = decisions.loc[(1, span["attributes"]["memeval.entry_id"])]
        expected = bool(decision["retained"]) == (decision["label"] == "substantive")
        note = by_span[span["context"]["span_id"]]
        assert note["result"]["label"] == ("correct" if expected else "incorrect")
        assert note["annotator_kind"] == "CODE" and note["result"]["explanation"]
    rejected = run_spans(client, project, metrics["run_id"], "memeval.pass_no:1",
                         "memeval.decision:reject")
    stage_notes = annotations_of(client, project, [s["context"]["span_id"] for s in rejected])
    assert {n["span_id"] for n in stage_notes if n["name"] == "stage decision"} == \
        {s["context"]["span_id"] for s in rejected}


def test_the_labelled_set_is_a_dataset_and_each_pass_an_experiment(pushed: tuple) -> None:
    _, metrics, _, client = pushed
    name = f"memeval {metrics['dataset']['name']} {metrics['dataset']['fingerprint'][:12]}"
    datasets = [d for d in pages(client, "/v1/datasets") if d["name"] == name]
    assert len(datasets) == 1 and datasets[0]["example_count"] == metrics["dataset"]["entries"]
    experiments = experiments_of(client, metrics["run_id"])
    assert sorted(e["metadata"]["pass"] for e in experiments) == [1, 2, 3]
    for experiment in experiments:
        assert experiment["successful_run_count"] == metrics["dataset"]["entries"]
        recall = metrics["passes"][experiment["metadata"]["pass"] - 1]["substantive_recall"]
        assert experiment["metadata"]["substantive_recall"] == recall
    runs = json.loads(client.get(f"/v1/experiments/{experiments[0]['id']}/json").text)
    scores = [a["score"] for r in runs for a in r["annotations"] if a["name"] == "correct"]
    assert len(scores) == metrics["dataset"]["entries"]


def test_experiments_are_named_by_pass_and_settings_short_enough_to_read(pushed: tuple) -> None:
    run_dir, metrics, _, client = pushed
    experiments = experiments_of(client, metrics["run_id"])
    names = [e["name"] for e in experiments]
    assert len(set(names)) == len(names) == 3
    for experiment in experiments:
        name = experiment["name"]
        assert len(name) <= 60 and name.isascii(), name
        # the pass first, then every setting (those that differ from other runs' first)
        assert name.startswith(f"p{experiment['metadata']['pass']} "), name
        assert {"t0.995", "s0", metrics["embedder"]["identity"], metrics["scorer"]["name"],
                JUDGE_MODEL} <= set(name.split()), name
        assert experiment["metadata"]["threshold"]["target_recall"] == 0.995
        assert metrics["run_id"] in experiment["description"]  # the run, kept out of the name
        # the list shows about 30 characters of a description: the run's date and time first
        assert experiment["description"].startswith(f"{run_dir.parent.name}/{run_dir.name}: ")


EXPERIMENT_SUMMARY = """query ($id: ID!) { node(id: $id) { ... on Experiment {
    annotationSummaries { annotationName meanScore count }
    costSummary { total { tokens cost } } } } }"""


def test_each_passs_headline_metrics_are_its_experiments_evaluations(pushed: tuple) -> None:
    _, metrics, _, client = pushed
    for experiment in experiments_of(client, metrics["run_id"]):
        node = graphql(client, EXPERIMENT_SUMMARY, id=experiment["id"])["node"]
        means = {s["annotationName"]: s for s in node["annotationSummaries"]}
        figures = metrics["passes"][experiment["metadata"]["pass"] - 1]
        assert means["substantive recall"]["meanScore"] == pytest.approx(
            figures["substantive_recall"])
        assert means["substantive recall"]["count"] == figures["per_label"]["substantive"]["n"]
        noise = means["noise stored"]
        assert noise["count"] == figures["per_label"]["noise"]["n"] > 0
        assert noise["meanScore"] * noise["count"] == pytest.approx(figures["noise_stored"])
        assert means["pre-judge filtered"]["meanScore"] == pytest.approx(
            figures["prejudge_filter_rate"])
        called = means["judge called"]
        assert called["count"] == figures["entries"]
        assert called["meanScore"] * called["count"] == pytest.approx(figures["judge_calls"])
        # the headline figures as the terminal prints them (57.6%), in hundredths: one run each
        recall = means["Recall % (higher is better)"]
        assert recall["count"] == 1
        assert recall["meanScore"] == round(100 * figures["substantive_recall"], 1)
        assert means["Pre-judge % (higher is better)"]["meanScore"] == round(
            100 * figures["prejudge_filter_rate"], 1)
    directions = {c["name"]: c["optimization_direction"]
                  for c in pages(client, "/v1/annotation_configs")}
    assert directions["Recall % (higher is better)"] == "MAXIMIZE"


def test_the_judges_tokens_and_cost_reach_phoenixs_cost_columns(pushed: tuple) -> None:
    run_dir, metrics, project, client = pushed
    decisions = read_decisions(run_dir)
    judged = run_spans(client, project, metrics["run_id"], "memeval.stage:judge")
    paid = [s for s in judged if not s["attributes"]["memeval.judge.cached"]]
    assert paid and len(paid) < len(judged)  # passes 2 and 3 are served from the judge cache
    for span in paid:
        attributes = span["attributes"]
        assert (attributes["llm.model_name"], attributes["llm.provider"]) == (JUDGE_MODEL,
                                                                              "anthropic")
        assert attributes["llm.token_count.total"] == attributes["llm.token_count.prompt"] + \
            attributes["llm.token_count.completion"] > 0
    for experiment in experiments_of(client, metrics["run_id"]):
        pass_no = experiment["metadata"]["pass"]
        total = graphql(client, EXPERIMENT_SUMMARY, id=experiment["id"])["node"]["costSummary"][
            "total"]
        mine = decisions[(decisions["pass_no"] == pass_no) & ~decisions["judge_cached"]]
        spent = int(mine["judge_tokens_in"].sum() + mine["judge_tokens_out"].sum())
        assert (total["tokens"] or 0) == spent
        cost = metrics["passes"][pass_no - 1]["judge_cost_usd"]
        assert (total["cost"] or 0.0) == pytest.approx(cost)
        assert (cost > 0) == (pass_no == 1)


def test_each_labelled_trace_is_annotated_with_its_verdict(pushed: tuple) -> None:
    _, metrics, project, client = pushed
    roots = [s for s in run_spans(client, project, metrics["run_id"], "memeval.pass_no:1")
             if s["name"].startswith("gate p") and "memeval.label" in s["attributes"]]
    trace_ids = [s["context"]["trace_id"] for s in roots]
    notes: list[dict] = []
    for start in range(0, len(trace_ids), 100):
        notes += pages(client, f"/v1/projects/{project}/trace_annotations",
                       trace_ids=trace_ids[start:start + 100], limit=1000)
    by_trace = {n["trace_id"]: n for n in notes if n["name"] == "gate decision"}
    assert set(by_trace) == set(trace_ids) and len(notes) == len(trace_ids)
    spans = {n["span_id"]: n for n in annotations_of(client, project,
                                                      [s["context"]["span_id"] for s in roots])
             if n["name"] == "gate decision"}
    for root in roots:
        note = by_trace[root["context"]["trace_id"]]
        assert note["annotator_kind"] == "CODE"
        assert note["result"] == spans[root["context"]["span_id"]]["result"]


def test_no_planted_secret_reaches_phoenix_or_the_run_directory(pushed: tuple) -> None:
    run_dir, metrics, project, client = pushed
    sent = [json.dumps(run_spans(client, project, metrics["run_id"]))]
    for dataset in pages(client, "/v1/datasets"):
        sent.append(client.get(f"/v1/datasets/{dataset['id']}/examples").text)
    for experiment in experiments_of(client, metrics["run_id"]):
        sent.append(client.get(f"/v1/experiments/{experiment['id']}/json").text)
    phoenix = "\n".join(sent)
    assert "[REDACTED:" in phoenix  # the planted rows did arrive, redacted
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    for secret in SECRETS:
        assert secret not in phoenix
        for path in files:
            assert secret.encode() not in path.read_bytes(), f"{secret[:8]}… in {path}"


def test_a_second_push_adds_nothing(pushed: tuple) -> None:
    run_dir, metrics, project, client = pushed
    before = len(run_spans(client, project, metrics["run_id"]))
    report = push_run(run_dir, PhoenixConfig(endpoint=str(client.base_url), project=project),
                      progress=False)
    assert report.runs_created == 0 and report.evaluations == 0
    assert len(run_spans(client, project, metrics["run_id"])) == before
    experiments = experiments_of(client, metrics["run_id"])
    assert len(experiments) == 3
    assert all(e["successful_run_count"] == metrics["dataset"]["entries"] for e in experiments)
    root = run_spans(client, project, metrics["run_id"], "memeval.pass_no:3")[0]
    names = [n["name"] for n in annotations_of(client, project, [root["context"]["span_id"]])]
    assert len(names) == len(set(names))  # upserted, not appended


def test_phoenix_down_at_the_end_of_a_run_loses_nothing(
        phoenix_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = f"memeval-test-{uuid.uuid4().hex[:8]}"
    nowhere = f"http://127.0.0.1:{free_port()}"
    metrics = run_experiment(config(tmp_path, nowhere, project, "experiment.passes=1",
                                    "dataset.limit=30"), tmp_path / "run")
    out = capsys.readouterr().out
    said = " ".join(out.split())  # wrapped for a 100-column terminal
    assert f"no server at {nowhere}" in said
    assert "push later: python -m memeval phoenix push" in said
    assert (tmp_path / "run" / "metrics.json").is_file()
    assert not (tmp_path / "run" / PHOENIX_DIR / "push.json").exists()
    report = push_run(tmp_path / "run", PhoenixConfig(endpoint=phoenix_url, project=project),
                      progress=False)
    with httpx.Client(base_url=phoenix_url, timeout=30) as client:
        assert len(run_spans(client, project, metrics["run_id"])) == report.spans > 0


def test_a_push_that_dies_halfway_is_finished_by_pushing_again(
        phoenix_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = f"memeval-test-{uuid.uuid4().hex[:8]}"
    cfg = config(tmp_path, "null", project, "experiment.passes=2", "dataset.limit=30")
    metrics = run_experiment(cfg, tmp_path / "run")
    settings = PhoenixConfig(endpoint=phoenix_url, project=project)
    real_create = PhoenixREST.create_run
    calls = {"n": 0}

    def dying(self: PhoenixREST, experiment_id: str, run: dict[str, Any]) -> str:
        calls["n"] += 1
        if calls["n"] > 20:
            raise PhoenixError("connection refused (Phoenix stopped)")
        return real_create(self, experiment_id, run)

    monkeypatch.setattr(PhoenixREST, "create_run", dying)
    out = io.StringIO()
    folder = tmp_path / "run" / PHOENIX_DIR
    assert report_run(tmp_path / "run", settings, lambda: folder, False, out) is None
    assert "failed" in out.getvalue() and "resumes without duplicates" in out.getvalue()
    monkeypatch.setattr(PhoenixREST, "create_run", real_create)
    report = push_run(tmp_path / "run", settings, progress=False)
    entries = metrics["dataset"]["entries"]
    assert report.runs_created == 2 * entries - 20
    with httpx.Client(base_url=phoenix_url, timeout=30) as client:
        experiments = experiments_of(client, metrics["run_id"])
        assert sorted(e["successful_run_count"] for e in experiments) == [entries, entries]
        frame = pd.DataFrame(run_spans(client, project, metrics["run_id"]))
        assert frame["context"].map(lambda c: c["span_id"]).is_unique


def test_passes_stream_to_phoenix_while_the_run_goes_on(
        phoenix_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = f"memeval-test-{uuid.uuid4().hex[:8]}"
    seen: list[tuple[int, int]] = []  # (pass being streamed, pass-1 spans Phoenix already holds)
    real_call = PassStreamer.__call__

    def watching(self: PassStreamer, decisions: list) -> None:
        pass_no = decisions[0].pass_no
        if pass_no == 2:
            with httpx.Client(base_url=phoenix_url, timeout=30) as client:
                held = 0
                for _ in range(120):  # Phoenix stores spans (and makes the project) later
                    with contextlib.suppress(httpx.HTTPStatusError):
                        held = len(run_spans(client, project, self.run().run_id,
                                             "memeval.pass_no:1"))
                    if held:
                        break
                    time.sleep(0.5)
            seen.append((pass_no, held))
        real_call(self, decisions)

    monkeypatch.setattr(PassStreamer, "__call__", watching)
    metrics = run_experiment(config(tmp_path, phoenix_url, project, "experiment.passes=2",
                                    "dataset.limit=30"), tmp_path / "run")
    assert seen and seen[0][0] == 2 and seen[0][1] > 0  # pass 1 was in Phoenix mid-run
    record = json.loads((tmp_path / "run" / PHOENIX_DIR / "push.json").read_text())
    assert record["run_id"] == metrics["run_id"]


@pytest.mark.parametrize("workload", [
    [],  # the bundled three-pass store
    ["dataset=locomo", f"dataset.path={CORPORA / 'locomo_small.json'}"],  # a memory corpus
])
def test_retrieval_searches_arrive_as_retriever_spans_with_the_top_mqs(
        phoenix_url: str, tmp_path: Path, workload: list[str]) -> None:
    project = f"memeval-test-{uuid.uuid4().hex[:8]}"
    cfg = compose(["+experiment=retrieval_replay", "embedder=hashing", "progress=false",
                   "plots=false", "bootstrap=20", f"cache_dir={tmp_path / 'cache'}",
                   "experiment.store_passes=1", "experiment.passes=2", *workload,
                   f"reporting.phoenix.endpoint={phoenix_url}",
                   f"reporting.phoenix.project={project}"])
    metrics = run_experiment(cfg, tmp_path / "run")
    searches = read_table(tmp_path / "run", "retrieval_queries")
    arms = metrics["passes"][0]["arms"]
    with httpx.Client(base_url=phoenix_url, timeout=30) as client:
        spans = []
        for _ in range(120):  # stored asynchronously
            spans = run_spans(client, project, metrics["run_id"], "memeval.arm:sip0001",
                              "memeval.pass_no:2")
            if len(spans) == len(searches) // (2 * len(arms)):
                break
            time.sleep(0.5)
    mine = searches[(searches["arm"] == "sip0001") & (searches["pass"] == 2)].set_index(
        "query_id")
    chars = PhoenixConfig().text_chars
    assert len(spans) == len(mine) > 0
    for span in spans:
        attributes = span["attributes"]
        row = mine.loc[attributes["memeval.query_id"]]
        assert span["span_kind"] == "RETRIEVER"
        assert attributes["memeval.mqs.top.score"] == row["top_mqs"]
        assert attributes["retrieval.documents.0.document.id"] == row["top_memory"]
        for rank, text in enumerate(row["served_texts"]):  # what was retrieved, not an id alone
            assert attributes[f"retrieval.documents.{rank}.document.content"] == text[:chars]
    record = json.loads((tmp_path / "run" / PHOENIX_DIR / "push.json").read_text())
    assert record["dataset"].startswith("memeval retrieval ")
    last = metrics["passes"][-1]
    with httpx.Client(base_url=phoenix_url, timeout=30) as client:
        experiments = experiments_of(client, metrics["run_id"])
        assert sorted(e["metadata"]["arm"] for e in experiments) == sorted(arms)
        for experiment in experiments:
            arm = experiment["metadata"]["arm"]
            assert experiment["name"].startswith(f"{arm} ")
            node = graphql(client, EXPERIMENT_SUMMARY, id=experiment["id"])["node"]
            means = {s["annotationName"]: s["meanScore"] for s in node["annotationSummaries"]}
            assert means["nDCG@5"] == pytest.approx(last[arm]["ndcg"])
            # the arm's nDCG@5 as the terminal prints it (0.622), in hundredths
            assert means["nDCG@5 x100 (higher is better)"] == round(
                100 * round(last[arm]["ndcg"], 3), 1)
        # each served document's relevance, from which Phoenix computes its own nDCG
        span = spans[0]
        found = graphql(client, DOCUMENT_METRICS, id=span["id"])["node"]
        grades = mine.loc[span["attributes"]["memeval.query_id"]]["served_grades"]
        assert [e["score"] for e in sorted(found["documentEvaluations"],
                                           key=lambda e: e["documentPosition"])] == \
            [float(g) for g in grades]


DOCUMENT_METRICS = """query ($id: ID!) { node(id: $id) { ... on Span {
    documentEvaluations { name score documentPosition } } } }"""
