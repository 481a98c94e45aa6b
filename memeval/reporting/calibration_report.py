"""What an `mqs_calibration` run prints and its report shows, as the same blocks: MQS's calibration,
configured and fitted out of fold, MAI's accuracy, and the learned trust score beside MQS; its
headline finding and the files it read. Each reads the sections as the run wrote them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memeval.reporting.outputs import RATE, Score
from memeval.reporting.table import Block, Note, Table
from memeval.results.result import as_ci
from memeval.results.sections import CALIBRATION_METRICS

Section = Mapping[str, Any]  # one section of metrics.json as written
CALIBRATION_ERRORS = {"brier": "Brier", "ece": "ECE"}  # lower is better


def _ci(value: float, bounds: Sequence[float]) -> str:
    return f"{value:.3f} [{bounds[0]:.3f}–{bounds[1]:.3f}]"


def _scored(report: Section, metric: str) -> str:
    return _ci(report[metric], report[f"{metric}_ci95"])


def _mqs_blocks(mqs: Section | None) -> list[Block]:
    if mqs is None:
        return [Note("MQS", "MQS: skipped (experiment.records=null)")]
    blocks: list[Block] = []
    configured, name, beside = mqs["configured"], mqs.get("score", "MQS"), mqs.get("reference_mqs")
    if configured is not None:
        other, second = ("reference MQS, same records", beside) if beside is not None else \
            ("fitted, out of fold", mqs["fitted_out_of_fold"])
        blocks.append(Table(
            f"{name} on {configured['n']} labelled records (P(trusted) = score/100; "
            f"{configured['bins']} equal-count bins)",
            ("metric", name if beside else "configured constants", other),
            tuple((metric, _scored(configured, metric),
                   _scored(second, metric) if second is not None else "—")
                  for metric in CALIBRATION_METRICS)))
    if mqs["constants"] is not None:
        blocks.append(Note(f"{name} constants", "constants (configured → fitted): " + ", ".join(
            f"{k} {v['configured']:g} → {v['fitted']:g}" for k, v in mqs["constants"].items())))
    grade = mqs["trust_grade"]
    if grade is not None:
        blocks.append(Note(
            f"{name} against the numeric trust grade",
            f"{name} against the numeric trust grade on {grade['n']} records: spearman "
            f"{_scored(grade, 'spearman')}, kendall {_scored(grade, 'kendall')}"))
    if mqs["notes"]:
        blocks.append(Note("Notes", "\n".join(f"note on {what}: {why}"
                                              for what, why in mqs["notes"].items())))
    return blocks


def _mai_block(mai: Section | None, left_out_for: str | None) -> Note:
    if left_out_for is not None:
        return Note("MAI and the learned trust score",
                    f"MAI and the learned trust score: memeval's own models, not "
                    f"{left_out_for}'s, so left out (experiment.learned=true runs them)")
    if mai is None:
        return Note("MAI", "MAI: skipped (experiment.scenarios=null)")
    accuracy = mai["accuracy"]
    return Note("MAI", f"MAI on {mai['scenarios']} scenarios: accuracy "
                + (_ci(accuracy, mai["accuracy_ci95"]) if accuracy is not None else "—"))


def _trust_table(trust: Section) -> Table:
    """The trust score beside memledger's MQS: out of fold on dev, then on the test split."""
    dev, test = trust["dev"], trust["test"]
    columns = [("trust score, CV", dev["trust_out_of_fold"]), ("MQS, dev", dev["mqs"])]
    if test is not None:
        columns += [("trust score, test", test["trust"]), ("MQS, test", test["mqs"])]
    gap = trust["gap"]
    return Table(
        f"Trust score on {dev['records']} dev records ({trust['folds']} folds)"
        + ("" if test is None else f" and {test['records']} test records")
        + f"; ranks against the dev {dev['mqs']['against']}"
        + ("" if test is None else f", the test {test['mqs']['against']}"),
        ("metric", *(name for name, _ in columns)),
        tuple((metric, *(_scored(report, metric) for _, report in columns))
              for metric in CALIBRATION_METRICS),
        "" if gap is None else "test − CV: " + ", ".join(f"{m} {v:+.3f}" for m, v in gap.items()))


def calibration_blocks(mqs: Section | None, mai: Section | None, trust: Section | None,
                       left_out_for: str | None = None) -> list[Block]:
    """`left_out_for`: the system whose run left memeval's own models (MAI, the trust score)
    out."""
    return [*_mqs_blocks(mqs), _mai_block(mai, left_out_for),
            *([_trust_table(trust)] if trust is not None else [])]


def calibration_scores(mqs: Section | None, mai: Section | None,
                       trust: Section | None) -> list[Score]:
    """The headline figures: the trust score's Brier and ECE with MQS's beside them on the same
    records (the test split when there is one), else the system's score against the labels
    (Spearman, Brier), else MAI's accuracy."""
    source = Path(str((mqs or {}).get("source", "records"))).stem
    if trust is not None:
        test = trust["test"]
        where, ours, theirs = (f"{test['records']} test records", test["trust"], test["mqs"]) \
            if test is not None else (f"{trust['dev']['records']} dev records, out of fold",
                                      trust["dev"]["trust_out_of_fold"], trust["dev"]["mqs"])
        return [Score(f"trust ({source})", f"{who}{name}", found[metric],
                      as_ci(found[f"{metric}_ci95"]), higher_is_better=False, population=where)
                for who, found in (("", ours), ("MQS ", theirs))
                for metric, name in CALIBRATION_ERRORS.items()]
    if mqs is not None and mqs["configured"] is not None:
        configured = mqs["configured"]
        where = f"{configured['n']} labelled records"
        return [Score(f"trust ({source})", "Spearman", configured["spearman"],
                      as_ci(configured["spearman_ci95"]), population=where),
                Score(f"trust ({source})", "Brier", configured["brier"],
                      as_ci(configured["brier_ci95"]), higher_is_better=False, population=where)]
    if mai is not None and mai["accuracy"] is not None:
        return [Score("MAI", "MAI accuracy", mai["accuracy"], as_ci(mai["accuracy_ci95"]),
                      unit=RATE, population=f"{mai['scenarios']} scenarios")]
    return []


def calibration_headline(mqs: Section | None, mai: Section | None,
                         trust: Section | None) -> str:
    """The headline figures in a sentence: whether the trust score beats MQS on Brier and ECE
    (95% CIs apart), else the system's score against the labels, else MAI's accuracy."""
    scores = calibration_scores(mqs, mai, trust)
    if not scores:
        return ""
    if trust is not None:
        pairs = list(zip(scores[:len(CALIBRATION_ERRORS)], scores[len(CALIBRATION_ERRORS):],
                         strict=True))
        beats = [ours.measure for ours, theirs in pairs if ours.below(theirs)]
        verdict = f"beats MQS on {' and '.join(beats)} (95% CIs apart)" if beats else \
            "does not beat MQS on Brier or ECE beyond the 95% CIs"
        return (f"On {scores[0].population} the trust score {verdict}: " + "; ".join(
            f"{ours.measure} {ours.shown} against {theirs.shown}" for ours, theirs in pairs)
            + " (lower is better).")
    if mqs is not None and mqs["configured"] is not None:
        return (f"{mqs.get('score', 'MQS')} on {scores[0].population}: "
                + ", ".join(f"{s.measure} {s.shown}" for s in scores) + " (95% CIs).")
    return f"MAI on {scores[0].population}: accuracy {scores[0].shown}."


def _file(path: str, fingerprint: str | None, size: str) -> str:
    return f"{Path(path).name} ({size}, fingerprint {fingerprint})"


def calibration_inputs(mqs: Section | None, mai: Section | None,
                       trust: Section | None) -> dict[str, str]:
    """The labelled sets the run read, each by file name, size and fingerprint."""
    used = {}
    if mqs is not None:
        used["labelled records"] = _file(mqs["source"], mqs["fingerprint"],
                                         f"{mqs['records']} records")
    if mai is not None:
        used["MAI scenarios"] = _file(mai["source"], mai["fingerprint"],
                                      f"{mai['scenarios']} scenarios")
    if trust is not None:
        dev, test = trust["dev"], trust["test"]
        used["trust score dev records"] = (
            f"{dev['records']} records from {', '.join(Path(s).name for s in dev['sources'])} "
            f"(fingerprints {', '.join(dev['fingerprints'])})")
        if test is not None:
            used["trust score test records"] = _file(test["source"], test["fingerprint"],
                                                     f"{test['records']} records")
    return used
