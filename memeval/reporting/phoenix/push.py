"""Push a run directory to Phoenix: spans, annotations, the labelled set, one experiment per pass.

Everything is read from RUN_DIR (metrics.json, phoenix/spans.jsonl, phoenix/examples.jsonl), so a
run pushes the same way at its end or days later. Every step is idempotent: span ids are
derived from the run, annotations upsert by identifier, the dataset is found by a name that holds
its fingerprint, experiments by name and run id, runs by example. A push that dies halfway
(Phoenix stopped) is finished by pushing again; nothing is duplicated.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from tqdm import tqdm

from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.files import EXAMPLES, PHOENIX_DIR, SPANS, passes_by_arm, read_jsonl
from memeval.reporting.phoenix.otlp import ExportError, batches, export_batch
from memeval.reporting.phoenix.rest import PhoenixREST
from memeval.results.run_dir import read_metrics
from memeval.utils.atomic import write_text_atomic
from memeval.utils.redact import redact

PUSH_RECORD = "push.json"
ANNOTATOR = "memeval"  # the identifier that makes re-annotation an update
INGEST_TIMEOUT_S = 120.0
CONCURRENCY = 8
EVALUATIONS = ("correct",)


class PhoenixUnavailable(ExportError):
    """No Phoenix answers at the endpoint."""


@dataclass
class PushReport:
    endpoint: str
    project: str
    run_id: str
    spans: int = 0
    annotations: int = 0
    dataset: str = ""
    experiments: dict[str, str] = field(default_factory=dict)
    runs_created: int = 0
    evaluations: int = 0
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def spans_per_s(self) -> float:
        """Spans sent per second of sending (Phoenix stores them asynchronously after)."""
        spent = self.seconds.get("spans", 0.0)
        return self.spans / spent if spent else 0.0

    def summary(self) -> str:
        traced = (f"{self.spans} spans ({self.spans_per_s:.0f}/s), {self.annotations} "
                  f"annotations, " if self.spans else "")  # a quality experiment traces nothing
        return (f"Phoenix {self.endpoint} (project '{self.project}'): {traced}dataset "
                f"'{self.dataset}', {len(self.experiments)} experiments "
                f"({self.runs_created} runs new, {self.evaluations} evaluations) "
                f"in {sum(self.seconds.values()):.1f} s")


def redacted(value: Any) -> Any:
    """Every string in a JSON-like value redacted: nothing leaves unredacted, even from a run
    directory written by an older memeval."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {k: redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted(v) for v in value]
    return value


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat()


def _correct(attributes: Mapping[str, Any]) -> bool:
    return bool(attributes.get("memeval.retained")) == (attributes.get("memeval.label")
                                                        == "substantive")


def _explanation(attributes: Mapping[str, Any]) -> str:
    """The outcome names the deciding stage when an entry was dropped."""
    label, outcome = attributes["memeval.label"], attributes["memeval.outcome"]
    verdict = "right" if _correct(attributes) else "wrong"
    fate = f"kept ({outcome})" if attributes.get("memeval.retained") else f"dropped at {outcome}"
    return f"{label} entry {fate}: {verdict}, since only substantive entries belong in memory"


def decision_annotations(roots: Sequence[Mapping[str, Any]],
                deciders: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A CODE annotation on each labelled entry's root span and on the stage span that decided."""
    out = []
    for root in roots:
        attributes = root["attributes"]
        if attributes.get("memeval.label") is None:
            continue
        decider = deciders.get(root["trace_id"])
        correct = _correct(attributes)
        result = {"label": "correct" if correct else "incorrect", "score": float(correct),
                  "explanation": _explanation(attributes)}
        meta = {"label": attributes["memeval.label"], "outcome": attributes["memeval.outcome"]}
        out.append({"span_id": root["span_id"], "name": "gate decision", "annotator_kind": "CODE",
                    "result": result, "metadata": meta, "identifier": ANNOTATOR})
        if decider:
            out.append({"span_id": decider["span_id"], "name": "stage decision",
                        "annotator_kind": "CODE", "result": result, "metadata": meta,
                        "identifier": ANNOTATOR})
    return out


def record_push(folder: Path, report: PushReport) -> None:
    """What the last push sent, in RUN_DIR/phoenix/push.json."""
    folder.mkdir(exist_ok=True)
    write_text_atomic(folder / PUSH_RECORD, json.dumps(
        {**asdict(report), "spans_per_s": round(report.spans_per_s, 1),
         "pushed_at": datetime.now(UTC).isoformat()}, indent=2))


def holds_spans(run_dir: Path) -> bool:
    """The run kept the spans of a replay (or of its searches)."""
    return (run_dir / PHOENIX_DIR / SPANS).is_file()


class Pusher:
    def __init__(self, run_dir: Path, settings: PhoenixConfig, progress: bool) -> None:
        base = settings.base_url
        if not base:
            raise ValueError("reporting.phoenix.endpoint is not set: nowhere to push")
        folder = run_dir / PHOENIX_DIR
        if not (folder / SPANS).is_file():
            raise FileNotFoundError(
                f"{folder / SPANS} not found: the run replayed no traces or was made with "
                f"reporting.phoenix.enabled=false")
        self.run_dir, self.folder, self.settings = run_dir, folder, settings
        self.progress = progress
        self.metrics = read_metrics(run_dir)
        self.rest = PhoenixREST(base, settings.timeout_s)
        self.report = PushReport(base, settings.project, str(self.metrics["run_id"]))

    def _timed(self, phase: str, step: Callable[[], None]) -> None:
        started = time.perf_counter()
        step()
        self.report.seconds[phase] = round(time.perf_counter() - started, 3)

    def run(self) -> PushReport:
        if not self.rest.healthy():
            raise PhoenixUnavailable(f"no Phoenix answers at {self.rest.base_url} (start one with "
                                     f"`python -m memeval phoenix serve`)")
        try:
            roots: list[dict[str, Any]] = []
            deciders: dict[str, dict[str, Any]] = {}
            judged: set[str] = set()
            checkpoints: list[str] = []
            self._timed("spans", lambda: self._spans(roots, deciders, judged, checkpoints))
            # Experiments need no stored spans: recording them first hides ingestion's lag.
            self._timed("experiments", lambda: self._experiments(roots, judged))
            self._timed("ingest", lambda: self._await_ingestion(checkpoints))
            self._timed("annotations", lambda: self._annotate(roots, deciders))
        finally:
            self.rest.close()
        record_push(self.folder, self.report)
        return self.report

    def _spans(self, roots: list[dict[str, Any]], deciders: dict[str, dict[str, Any]],
               judged: set[str], checkpoints: list[str]) -> None:
        traces_url = f"{self.rest.base_url}/v1/traces"
        spans = (redacted(span) for span in read_jsonl(self.folder / SPANS))
        bar = tqdm(desc="phoenix spans", unit="span", disable=not self.progress, leave=False)
        for batch in batches(spans, self.settings.batch_spans):
            export_batch(self.rest.http, traces_url, batch, self.settings.project)
            for span in batch:
                self._index(dict(span), roots, deciders, judged)
            checkpoints.append(batch[-1]["span_id"])
            self.report.spans += len(batch)
            bar.update(len(batch))
        bar.close()

    @staticmethod
    def _index(span: dict[str, Any], roots: list[dict[str, Any]],
               deciders: dict[str, dict[str, Any]], judged: set[str]) -> None:
        """Remember what annotations and experiments need, without the texts."""
        attributes = span["attributes"]
        if span["name"] == "gate":
            attributes.pop("input.value", None)
            attributes.pop("memeval.user_prompt", None)
            roots.append(span)
        elif span["name"].startswith("gate."):
            if span["name"] == "gate.judge":
                judged.add(span["trace_id"])
            if attributes.get("memeval.decision") == "reject" or span["name"] == "gate.write":
                deciders[span["trace_id"]] = span

    def _await_ingestion(self, checkpoints: Sequence[str]) -> None:
        """Annotations on spans Phoenix has not stored yet are refused: wait for the last span of
        every batch (ingestion is asynchronous)."""
        waiting, deadline = set(checkpoints), time.monotonic() + INGEST_TIMEOUT_S
        while waiting:
            chunk = sorted(waiting)[:100]
            waiting -= self.rest.present_span_ids(self.settings.project, chunk)
            if waiting and time.monotonic() > deadline:
                raise ExportError(f"Phoenix has not ingested {len(waiting)} span batches after "
                                  f"{INGEST_TIMEOUT_S:.0f} s")
            if waiting:
                time.sleep(0.25)

    def _annotate(self, roots: Sequence[dict[str, Any]],
                  deciders: Mapping[str, dict[str, Any]]) -> None:
        notes = decision_annotations(roots, deciders)
        for batch in batches(notes, 1000):
            self.rest.annotate_spans(list(batch))
        self.report.annotations = len(notes)

    def _dataset(self) -> tuple[str, dict[str, str]]:
        """The labelled set, uploaded once per fingerprint: (dataset id, entry id -> node id)."""
        dataset = self.metrics["dataset"]
        prefix = str(dataset["fingerprint"])[:12]
        name = f"memeval {dataset['name']} {prefix}"
        self.report.dataset = name
        dataset_id = self.rest.dataset_id(name)
        if dataset_id is None:
            examples = [{"id": f"{prefix}:{e['id']}",
                         "input": {"user_prompt": e["user_prompt"],
                                   "assistant_response": e["assistant_response"]},
                         "output": {"label": e["label"]},
                         "metadata": {"entry_id": e["id"], "label_source": e["label_source"]}}
                        for e in redacted(list(read_jsonl(self.folder / EXAMPLES)))]
            dataset_id = self.rest.create_dataset(
                name, f"memeval dataset '{dataset['name']}', fingerprint {dataset['fingerprint']}",
                examples)
        nodes = self.rest.example_node_ids(dataset_id)
        return dataset_id, {k.split(":", 1)[1]: v for k, v in nodes.items()}

    def _experiments(self, roots: Sequence[dict[str, Any]], judged: set[str]) -> None:
        dataset_id, nodes = self._dataset()
        run_id = self.report.run_id
        existing = {e["name"]: e["id"] for e in self.rest.experiments(dataset_id)
                    if (e.get("metadata") or {}).get("memeval_run_id") == run_id}
        grouped: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
        for root in roots:
            attributes = root["attributes"]
            if attributes["memeval.phase"] == "eval":
                grouped[(attributes["memeval.arm"], attributes["memeval.pass"])].append(root)
        metrics = {(arm, int(p["pass"])): p for arm, passes in passes_by_arm(self.metrics).items()
                   for p in passes}
        for (arm, pass_no), members in sorted(grouped.items()):
            name = (f"{self.run_dir.name} {run_id[:8]} {self.metrics['experiment']} {arm} "
                    f"pass {pass_no}")
            experiment_id = existing.get(name) or self.rest.create_experiment(
                dataset_id, name, f"memeval {self.metrics['experiment']}: {arm} arm, pass "
                f"{pass_no} of run {self.run_dir.name}",
                self._experiment_metadata(arm, pass_no, metrics.get((arm, pass_no), {})))
            self.report.experiments[name] = experiment_id
            self._runs(experiment_id, members, nodes, judged)

    def _experiment_metadata(self, arm: str, pass_no: int,
                             metrics: Mapping[str, Any]) -> dict[str, Any]:
        headline = ("substantive_recall", "noise_stored", "low_value_filtered_rate",
                    "prejudge_filter_rate", "judge_calls", "judge_call_saving")
        return {"memeval_run_id": self.report.run_id, "experiment": self.metrics["experiment"],
                "arm": arm, "pass": pass_no, "seed": self.metrics.get("seed"),
                "embedder": (self.metrics.get("embedder") or {}).get("identity"),
                "judge": self.metrics.get("judge"),
                "scorer": (self.metrics.get("scorer") or {}).get("name"),
                **{name: metrics.get(name) for name in headline}}

    def _runs(self, experiment_id: str, members: Sequence[dict[str, Any]],
              nodes: Mapping[str, str], judged: set[str]) -> None:
        done = self.rest.experiment_runs(experiment_id)
        unfinished = self.rest.runs_missing_evaluations(experiment_id, EVALUATIONS) if done \
            else set()

        def record(root: dict[str, Any]) -> int:
            attributes = root["attributes"]
            node = nodes[attributes["memeval.entry_id"]]
            run_id = done.get(node)
            if run_id is not None and run_id not in unfinished:
                return 0  # recorded and evaluated by an earlier push
            if run_id is None:
                run_id = self.rest.create_run(experiment_id, {
                    "dataset_example_id": node, "repetition_number": 1,
                    "output": {"outcome": attributes["memeval.outcome"],
                               "retained": attributes["memeval.retained"],
                               "judge_called": root["trace_id"] in judged},
                    "start_time": _iso(root["start_ns"]), "end_time": _iso(root["end_ns"]),
                    "trace_id": root["trace_id"]})
                self.report.runs_created += 1
            return self._evaluate(run_id, root)

        bar = tqdm(total=len(members), desc="phoenix runs", disable=not self.progress,
                   leave=False)
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            for count in pool.map(record, members):
                self.report.evaluations += count
                bar.update()
        bar.close()

    def _evaluate(self, run_id: str, root: Mapping[str, Any]) -> int:
        """One CODE evaluation per labelled entry (one request each, Phoenix's slowest call:
        whether the judge was called rides in the run's output instead)."""
        attributes = root["attributes"]
        if attributes.get("memeval.label") is None:
            return 0
        correct = _correct(attributes)
        self.rest.evaluate({
            "experiment_run_id": run_id, "annotator_kind": "CODE", "name": "correct",
            "start_time": _iso(root["start_ns"]), "end_time": _iso(root["end_ns"]),
            "result": {"label": "correct" if correct else "incorrect", "score": float(correct),
                       "explanation": _explanation(attributes)}})
        return 1


def push_run(run_dir: str | Path, settings: PhoenixConfig, progress: bool = True) -> PushReport:
    return Pusher(Path(run_dir), settings, progress).run()


Push = Callable[[Path, PhoenixConfig, bool], PushReport]


def report_run(run_dir: Path, settings: PhoenixConfig, write: Callable[[], Path | None],
               progress: bool, out: TextIO, push: Push = push_run) -> PushReport | None:
    """At a run's end: write the Phoenix files (`write` says where what is pushed is kept), then
    `push` when a server answers. Never raises: the run's results are already on disk, and a
    push can always be repeated."""
    try:
        folder = write()
    except Exception as err:
        print(f"Phoenix: could not write spans ({err}); the run's results are intact",
              file=out)
        return None
    if folder is None:  # nothing to trace
        return None
    later = f"push later with `python -m memeval phoenix push {run_dir}`"
    kept = f"spans written to {folder / SPANS}" if folder.name == PHOENIX_DIR else \
        f"per-item tables kept in {folder}"  # a quality experiment's
    if not settings.base_url:
        print(f"Phoenix: {kept} (no endpoint set); {later}", file=out)
        return None
    try:
        report = push(run_dir, settings, progress)
    except PhoenixUnavailable:
        print(f"Phoenix: no server at {settings.base_url}; {kept}; {later}", file=out)
        return None
    except Exception as err:
        print(f"Phoenix: push to {settings.base_url} failed ({err}); {kept}; {later} (it "
              f"resumes without duplicates)", file=out)
        return None
    print(report.summary(), file=out)
    return report

