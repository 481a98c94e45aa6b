"""Push a run directory to Phoenix: spans, annotations, the labelled set, one experiment per pass.

Everything is read from RUN_DIR (metrics.json, phoenix/spans.jsonl, phoenix/examples.jsonl), so a
run pushes the same way at its end or days later. Every step is idempotent: span ids are
derived from the run, annotations upsert by identifier, the dataset is found by a name that holds
its fingerprint, experiments by run id and arm and pass in their metadata (an experiment an older
memeval named otherwise is renamed), runs by example, evaluations upsert. A push that dies halfway
(Phoenix stopped) is finished by pushing again; nothing is duplicated.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from memeval.reporting.outputs import Score, beside_passes, declared_scores, pass_scores
from memeval.reporting.phoenix import naming
from memeval.reporting.phoenix.config import PhoenixConfig
from memeval.reporting.phoenix.experiment_runs import ExperimentRun, record_runs
from memeval.reporting.phoenix.files import EXAMPLES, PHOENIX_DIR, SPANS, passes_by_arm, read_jsonl
from memeval.reporting.phoenix.headline import declare_directions, headline_evaluations
from memeval.reporting.phoenix.otlp import ExportError, batches, export_batch
from memeval.reporting.phoenix.rest import PhoenixREST
from memeval.reporting.phoenix.retrieval_push import (
    document_annotations,
    holds_searches,
    push_searches,
)
from memeval.reporting.phoenix.spans import FILTER_STAGES
from memeval.reporting.table import wrapped
from memeval.results.result import PassMetrics
from memeval.results.run import CONFIG, read_config
from memeval.results.run_dir import read_metrics
from memeval.utils.atomic import write_text_atomic
from memeval.utils.redact import redacted

PUSH_RECORD = "push.json"
ANNOTATOR = "memeval"  # the identifier that makes re-annotation an update
INGEST_TIMEOUT_S = 120.0
DOCUMENT_BATCH = 100  # Phoenix stores about 100 document evaluations a second
EVALUATIONS = ("correct", "substantive recall", "noise stored", "pre-judge filtered",
               "judge called")


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
        parts = []
        if self.spans:  # a quality experiment traces nothing
            parts.append(f"{self.spans} spans ({self.spans_per_s:.0f}/s), {self.annotations} "
                         f"annotations")
        if self.dataset:
            parts.append(f"dataset '{self.dataset}', {len(self.experiments)} experiments "
                         f"({self.runs_created} runs new, {self.evaluations} evaluations)")
        return wrapped(f"Phoenix {self.endpoint} (project '{self.project}'): "
                       f"{', '.join(parts)} in {sum(self.seconds.values()):.1f} s")


def current(span: dict[str, Any]) -> dict[str, Any]:
    """A span of a run directory an older memeval wrote, with today's attribute names:
    `memeval.pass` was one Phoenix's span filter cannot parse (`pass` is a Python keyword)."""
    attributes = span["attributes"]
    if "memeval.pass" in attributes:
        attributes["memeval.pass_no"] = attributes.pop("memeval.pass")
    return span


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
                         deciders: Mapping[str, Mapping[str, Any]]
                         ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(span annotations, trace annotations): a CODE verdict on each labelled entry's root span,
    on the stage span that decided, and on its trace, which is what the traces table shows."""
    spans, traces = [], []
    for root in roots:
        attributes = root["attributes"]
        if attributes.get("memeval.label") is None:
            continue
        decider = deciders.get(root["trace_id"])
        correct = _correct(attributes)
        note = {"name": "gate decision", "annotator_kind": "CODE", "identifier": ANNOTATOR,
                "result": {"label": "correct" if correct else "incorrect",
                           "score": float(correct), "explanation": _explanation(attributes)},
                "metadata": {"label": attributes["memeval.label"],
                             "outcome": attributes["memeval.outcome"]}}
        spans.append({"span_id": root["span_id"], **note})
        traces.append({"trace_id": root["trace_id"], **note})
        if decider:
            spans.append({"span_id": decider["span_id"], **note, "name": "stage decision"})
    return spans, traces


def _evaluation(name: str, holds: bool, yes: str, no: str, explanation: str) -> dict[str, Any]:
    return {"name": name, "label": yes if holds else no, "score": float(holds),
            "explanation": explanation}


def run_evaluations(attributes: Mapping[str, Any], judge_called: bool) -> list[dict[str, Any]]:
    """An entry's CODE evaluations. Phoenix shows an experiment's mean score per evaluation in
    its experiments list and compare view, so each headline metric is an evaluation whose mean is
    that metric, on the entries metrics.json counts it over: substantive recall and the share of
    noise stored over human-labelled entries, the pre-judge filter rate and the share of entries
    sent to the judge over all of them."""
    outcome, label = attributes["memeval.outcome"], attributes.get("memeval.label")
    retained, human = bool(attributes.get("memeval.retained")), \
        attributes.get("memeval.label_source") == "human"
    ended = f"ended at {outcome}"
    out = [_evaluation("pre-judge filtered", outcome in FILTER_STAGES, "filtered", "passed",
                       ended),
           _evaluation("judge called", judge_called, "called", "not called", ended)]
    if label is not None:
        out.append(_evaluation("correct", _correct(attributes), "correct", "incorrect",
                               _explanation(attributes)))
    if human and label == "substantive":
        out.append(_evaluation("substantive recall", retained, "kept", "dropped", ended))
    if human and label == "noise":
        out.append(_evaluation("noise stored", retained, "stored", "dropped", ended))
    return out


def run_label(run_dir: Path) -> str:
    """The run directory as Hydra names it, date/time: an experiment's description says it."""
    return f"{run_dir.parent.name}/{run_dir.name}"


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
        self.rest = PhoenixREST(base, settings.timeout_s, settings.max_body_bytes)
        self.report = PushReport(base, settings.project, str(self.metrics["run_id"]))
        self.documents: list[dict[str, Any]] = []  # served documents' relevance

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
            if holds_searches(self.run_dir):
                self._timed("retrieval", self._searches)
            self._timed("ingest", lambda: self._await_ingestion(checkpoints))
            self._timed("annotations", lambda: self._annotate(roots, deciders))
        finally:
            self.rest.close()
        record_push(self.folder, self.report)
        return self.report

    def _spans(self, roots: list[dict[str, Any]], deciders: dict[str, dict[str, Any]],
               judged: set[str], checkpoints: list[str]) -> None:
        traces_url = f"{self.rest.base_url}/v1/traces"
        spans = (redacted(current(span)) for span in read_jsonl(self.folder / SPANS))
        bar = tqdm(desc="phoenix spans", unit="span", disable=not self.progress, leave=False)
        for batch in batches(spans, self.settings.batch_spans):
            export_batch(self.rest.http, traces_url, batch, self.settings.project,
                         timeout_s=self.settings.timeout_s,
                         max_bytes=self.settings.max_body_bytes)
            for span in batch:
                self.documents += document_annotations(span)
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
        if span["parent_id"] is None and "memeval.entry_id" in attributes:  # an entry's root
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
        spans, traces = decision_annotations(roots, deciders)
        for batch in batches(spans, 1000):
            self.rest.annotate_spans(list(batch))
        for batch in batches(traces, 1000):
            self.rest.annotate_traces(list(batch))
        for batch in batches(self.documents, DOCUMENT_BATCH):
            self.rest.annotate_documents(list(batch))
        self.report.annotations = len(spans) + len(traces) + len(self.documents)

    def _searches(self) -> None:
        """A retrieval replay's queries as a dataset, an experiment per arm."""
        base = {"memeval_run_id": self.report.run_id, "run": run_label(self.run_dir),
                "experiment": self.metrics["experiment"], "tokens": self._tokens(),
                "overrides": naming.run_overrides(self.run_dir), "seed": self.metrics.get("seed"),
                "embedder": (self.metrics.get("embedder") or {}).get("identity")}
        name, made, (runs, evaluations) = push_searches(self.rest, self.run_dir, self.metrics,
                                                        base, run_label(self.run_dir))
        self.report.dataset = ", ".join(filter(None, (self.report.dataset, name)))
        self.report.experiments |= made
        self.report.runs_created += runs
        self.report.evaluations += evaluations

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
        """One experiment per measured gate pass; none for a run that gated nothing (a
        retrieval replay of a memory corpus sends its searches as their own dataset)."""
        grouped: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
        for root in roots:
            attributes = root["attributes"]
            if attributes["memeval.phase"] == "eval":
                grouped[(attributes["memeval.arm"], attributes["memeval.pass_no"])].append(root)
        if not grouped:
            return
        dataset_id, nodes = self._dataset()
        experiments = self.rest.experiments(dataset_id)
        existing = naming.experiments_of_run(experiments, self.report.run_id,
                                      lambda m: (m.get("arm"), m.get("pass")))
        metrics = {(arm, int(p["pass"])): p for arm, passes in passes_by_arm(self.metrics).items()
                   for p in passes}
        tokens, overrides = self._tokens(), naming.run_overrides(self.run_dir)
        experiment, run = self.metrics["experiment"], run_label(self.run_dir)
        chosen = {key: self._experiment_metadata(*key, metrics.get(key, {}), tokens, overrides)
                  for key in sorted(grouped)}
        varying = naming.settings_apart(self.rest, experiments, self.report.run_id,
                                 next(iter(chosen.values())))
        figures = gate_figures(self.run_dir, self.metrics)
        declare_directions(self.rest, [s for found in figures.values() for s in found])
        for (arm, pass_no), metadata in chosen.items():
            name = naming.name(metadata, varying, experiment)
            experiment_id = naming.upsert_experiment(
                self.rest, dataset_id, existing.get((arm, pass_no)), name,
                f"{run}: memeval {experiment}, {arm} arm, pass {pass_no} (run "
                f"{self.report.run_id})", metadata)
            self.report.experiments[name] = experiment_id
            self._runs(experiment_id, grouped[(arm, pass_no)], nodes, judged,
                       headline_evaluations(figures.get((arm, pass_no), []),
                                            f"{arm} arm, pass {pass_no}"))

    def _tokens(self) -> dict[str, str]:
        """What every experiment's name says of its configuration, in short words, those most
        often swept first: the content-score cut (`t0.99` for a recall target, `cut0.5` for a
        fixed cut), seed (`s0`), embedder, scorer and judge (its model, if it names one), from
        metrics.json and the run's config.yaml."""
        cfg = self._config()
        policy = OmegaConf.select(cfg, "threshold.policy")
        threshold = (f"cut{OmegaConf.select(cfg, 'threshold.value'):g}" if policy == "fixed"
                     else f"t{OmegaConf.select(cfg, 'threshold.target_recall'):g}"
                     if policy else None)
        # "st:all-MiniLM-L6-v2:pad16" is named "all-MiniLM-L6-v2", "anthropic:MODEL" "MODEL"
        identity = str((self.metrics.get("embedder") or {}).get("identity") or "").split(":")
        judge = str(self.metrics.get("judge") or "").split(":")
        values = {"threshold": threshold,
                  "seed": f"s{self.metrics['seed']}" if "seed" in self.metrics else None,
                  "embedder": identity[min(1, len(identity) - 1)] or None,
                  "scorer": (self.metrics.get("scorer") or {}).get("name"),
                  "judge": judge[-1] or None}
        return {key: str(value) for key, value in values.items() if value is not None}

    def _config(self) -> DictConfig:
        """The run's saved config.yaml (empty for a run written without one)."""
        if not (self.run_dir / CONFIG).is_file():
            return OmegaConf.create({})
        return read_config(self.run_dir)

    def _experiment_metadata(self, arm: str, pass_no: int, metrics: Mapping[str, Any],
                             tokens: Mapping[str, str], overrides: Mapping[str, str]
                             ) -> dict[str, Any]:
        headline = ("substantive_recall", "noise_stored", "low_value_filtered_rate",
                    "prejudge_filter_rate", "judge_calls", "judge_call_saving")
        return {"memeval_run_id": self.report.run_id, "run": run_label(self.run_dir),
                "experiment": self.metrics["experiment"], "arm": arm, "pass": pass_no,
                "lead": f"{'' if arm == 'main' else arm + ' '}p{pass_no}",
                "tokens": dict(tokens), "overrides": dict(overrides),
                "seed": self.metrics.get("seed"),
                "embedder": (self.metrics.get("embedder") or {}).get("identity"),
                "judge": self.metrics.get("judge"), "scorer": tokens.get("scorer"),
                "threshold": OmegaConf.to_container(self._config().get("threshold", {})),
                **{name: metrics.get(name) for name in headline}}

    def _runs(self, experiment_id: str, members: Sequence[dict[str, Any]],
              nodes: Mapping[str, str], judged: set[str],
              headline: Sequence[Mapping[str, Any]]) -> None:
        """A run per entry with its evaluations; the first also carries the pass's headline
        figures (headline.py), so each evaluation's mean is the figure."""
        anchor = members[0]["span_id"]
        runs = [ExperimentRun(
            nodes[root["attributes"]["memeval.entry_id"]],
            {"outcome": root["attributes"]["memeval.outcome"],
             "retained": root["attributes"]["memeval.retained"],
             "judge_called": root["trace_id"] in judged},
            _iso(root["start_ns"]), _iso(root["end_ns"]),
            [*run_evaluations(root["attributes"], root["trace_id"] in judged),
             *(headline if root["span_id"] == anchor else ())], root["trace_id"])
            for root in members]
        bar = tqdm(total=len(members), desc="phoenix runs", disable=not self.progress,
                   leave=False)
        created, written = record_runs(self.rest, experiment_id, runs,
                                       [*EVALUATIONS, *(e["name"] for e in headline)], bar)
        bar.close()
        self.report.runs_created += created
        self.report.evaluations += written


def gate_figures(run_dir: Path, metrics: Mapping[str, Any]) -> dict[tuple[str, int], list[Score]]:
    """Each gated pass's figures by (arm, pass), as the run declares them (outputs.py
    `pass_scores`); an arm's last pass also carries its system's other declared figures
    (compare_systems' gate ranking, trust, conflicts and search), so every headline figure has
    its place."""
    dataset = metrics.get("dataset") or {}
    bench = f"{metrics['experiment']} ({dataset.get('name')})"
    declared = declared_scores(run_dir)
    figures: dict[tuple[str, int], list[Score]] = {}
    for arm, passes in passes_by_arm(metrics).items():
        for written in passes:
            figures[(arm, int(written["pass"]))] = pass_scores(PassMetrics.from_dict(written),
                                                               bench)
        if passes:
            last = figures[(arm, int(passes[-1]["pass"]))]
            last += beside_passes(declared, arm, last)
    return figures


def push_run(run_dir: str | Path, settings: PhoenixConfig, progress: bool = True) -> PushReport:
    return Pusher(Path(run_dir), settings, progress).run()


Push = Callable[[Path, PhoenixConfig, bool], PushReport]


def report_run(run_dir: Path, settings: PhoenixConfig, write: Callable[[], Path | None],
               progress: bool, out: TextIO, push: Push = push_run) -> PushReport | None:
    """At a run's end: write the Phoenix files (`write` says where what is pushed is kept), then
    `push` when a server answers. Never raises: the run's results are already on disk, and a
    push can always be repeated."""
    def say(text: str, then: str = "") -> None:
        """A sentence wrapped for a 100-column terminal, then a command on a line of its own
        (never wrapped: it is for copying)."""
        print(wrapped(text) + (f"\n  {then}" if then else ""), file=out)

    try:
        folder = write()
    except Exception as err:
        say(f"Phoenix: could not write spans ({err}); the run's results are intact")
        return None
    if folder is None:  # nothing to trace
        return None
    later = f"push later: python -m memeval phoenix push {run_dir}"
    kept = f"spans written to {folder / SPANS}" if folder.name == PHOENIX_DIR else \
        f"per-item tables kept in {folder}"  # a quality experiment's
    if not settings.base_url:
        say(f"Phoenix: {kept} (no endpoint set).", later)
        return None
    try:
        report = push(run_dir, settings, progress)
    except PhoenixUnavailable:
        say(f"Phoenix: no server at {settings.base_url}; {kept}.", later)
        return None
    except Exception as err:
        say(f"Phoenix: push to {settings.base_url} failed ({err}); {kept}.",
            f"{later}  (it resumes without duplicates)")
        return None
    say(report.summary())
    return report

