"""Each setting in one place: memledger's MQS constants, confidence gate and MAI rubric live in
one config group each (memeval/conf/mqs/, memeval/conf/confidence_policy/, memeval/conf/mai/),
equal to the dataclass defaults, and every experiment that scores them composes them in at the
path its documented overrides use; so do the reference conflict rules, the learned conflict
detector and the content-aware trust score. The content-score threshold is its own group
(memeval/conf/threshold/), which a scorer may pick a default from; its old spelling under the
scorer is refused naming the new one."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from memeval.config import check_overrides, compose, validate
from memeval.engine.gate.threshold import ThresholdConfig
from memeval.paths import CONF_DIR
from memeval.quality.mai import MAIRubric
from memeval.quality.mqs import MQSConstants
from memeval.quality.policy import ConfidencePolicy
from memeval.registry import ConfigError

CONF = CONF_DIR
GROUPS = {"mqs": MQSConstants, "confidence_policy": ConfidencePolicy, "mai": MAIRubric}
# Where each experiment puts the two groups.
PLACES = {"mqs_calibration": "experiment", "three_pass": "experiment.stored_mqs",
          "three_pass_mixed": "experiment.stored_mqs"}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_the_yaml_holds_the_dataclass_defaults(group: str) -> None:
    assert yaml.safe_load((CONF / group / "memledger.yaml").read_text()) == asdict(GROUPS[group]())


def test_no_experiment_yaml_repeats_the_constants() -> None:
    repeated = ("confidence_points:", "filter_below:", "attribution_weight:", "negations:",
                "vague_words:")
    for path in (CONF / "experiment").glob("*.yaml"):
        text = path.read_text()
        assert not [key for key in repeated if key in text], path


# Where each experiment composes a shared group in: (experiment, group, option, place).
SHARED = [("mqs_calibration", "mai", "memledger", "experiment.mai"),
          ("mai_calibration", "mai", "memledger", "experiment.mai"),
          ("mqs_calibration", "trust", "content_aware", "experiment.trust"),
          ("conflict_detection", "conflict_rules", "openclaw", "experiment.rules"),
          ("conflict_detection", "conflict_detector", "learned", "experiment.detector"),
          ("three_pass", "conflict_detector", "learned", "experiment.stored_models.detector"),
          ("three_pass", "trust", "content_aware", "experiment.stored_models.trust"),
          ("three_pass_mixed", "trust", "content_aware", "experiment.stored_models.trust")]


@pytest.mark.slow
@pytest.mark.parametrize(("experiment", "group", "option", "place"), SHARED)
def test_each_experiment_composes_the_shared_groups_in(experiment: str, group: str, option: str,
                                                       place: str) -> None:
    node = OmegaConf.select(compose([f"+experiment={experiment}"]), place)
    assert OmegaConf.to_container(node) == yaml.safe_load(
        (CONF / group / f"{option}.yaml").read_text())


def test_the_rules_detector_option_holds_the_reference_rules() -> None:
    cfg = compose(["+experiment=conflict_detection", "conflict_detector@experiment.detector=rules",
                   "experiment.rules.compat=true"])
    detector = OmegaConf.to_container(cfg.experiment.detector)
    assert detector == {"name": "rules",
                        **yaml.safe_load((CONF / "conflict_rules" / "openclaw.yaml").read_text())}
    assert cfg.experiment.rules.compat is True


@pytest.mark.parametrize("experiment", sorted(PLACES))
def test_each_experiment_composes_the_groups_in(experiment: str) -> None:
    node = OmegaConf.select(compose([f"+experiment={experiment}"]), PLACES[experiment])
    assert OmegaConf.to_container(node.mqs) == asdict(MQSConstants())
    assert OmegaConf.to_container(node.policy) == asdict(ConfidencePolicy())


def test_the_documented_overrides_still_reach_the_constants() -> None:
    cfg = compose(["+experiment=mqs_calibration", "experiment.mqs.zero_confidence_is_missing=true",
                   "experiment.mqs.confidence_points=5", "experiment.policy.flag_below=0.7"])
    assert cfg.experiment.mqs.zero_confidence_is_missing is True
    assert cfg.experiment.mqs.confidence_points == 5 and cfg.experiment.mqs.usage_points == 25.0
    assert cfg.experiment.policy.flag_below == 0.7
    cfg = compose(["+experiment=three_pass", "experiment.stored_mqs.mqs.hedged_penalty=7"])
    assert cfg.experiment.stored_mqs.mqs.hedged_penalty == 7
    assert cfg.experiment.stored_mqs.conflict_similarity == 0.65


# The content-score threshold: one config group (memeval/conf/threshold/), read by the
# content-score stage.
THRESHOLDS = sorted((CONF / "threshold").glob("*.yaml"))


def test_the_default_threshold_yaml_holds_the_dataclass_defaults() -> None:
    default = yaml.safe_load((CONF / "threshold" / "judge_quantile.yaml").read_text())
    assert default == asdict(ThresholdConfig())
    assert OmegaConf.to_container(compose([]).threshold) == default


@pytest.mark.parametrize("path", THRESHOLDS, ids=lambda p: p.stem)
def test_each_threshold_option_sets_every_setting(path: Path) -> None:
    """Composed in struct mode: a setting an option leaves out could not be overridden."""
    assert set(yaml.safe_load(path.read_text())) == set(asdict(ThresholdConfig()))


@pytest.mark.parametrize(("scorer", "option"), [
    ("logistic", "judge_quantile"), ("knn_margin", "judge_quantile_empirical"),
    ("memoryd", "fixed")])
def test_a_scorer_picks_its_default_threshold_and_the_command_line_wins(
        scorer: str, option: str) -> None:
    expected = yaml.safe_load((CONF / "threshold" / f"{option}.yaml").read_text())
    cfg = compose([f"scorer={scorer}"])
    assert OmegaConf.to_container(cfg.threshold) == expected and "threshold" not in cfg.scorer
    cfg = compose([f"scorer={scorer}", "threshold=fixed", "threshold.value=0.2"])
    assert (cfg.threshold.policy, cfg.threshold.value) == ("fixed", 0.2)


def test_the_threshold_reaches_the_gate_as_one_validated_setting() -> None:
    checked = validate(compose(["+experiment=feedback_loop", "threshold.min_accepted=30"]))
    assert checked.gate.threshold == ThresholdConfig(
        **{**yaml.safe_load((CONF / "threshold" / "judge_quantile_empirical.yaml").read_text()),
           "refresh": False, "min_accepted": 30})


@pytest.mark.bad_input
def test_the_threshold_is_refused_under_the_gate_naming_its_group() -> None:
    with pytest.raises(ConfigError, match=r"gate.threshold is not a setting: the content-score "
                                          r"cut is the top-level threshold group"):
        validate(compose(["+experiment=three_pass", "+gate.threshold.target_recall=0.9"]))


@pytest.mark.bad_input
@pytest.mark.parametrize(("args", "message"), [
    (["scorer.threshold.target_recall=0.9"],
     "scorer.threshold.target_recall is now threshold.target_recall: "
     "use threshold.target_recall=0.9"),
    (["-m", "scorer.threshold.target_recall=0.9,0.95"],
     "scorer.threshold.target_recall is now threshold.target_recall: "
     "use threshold.target_recall=0.9,0.95"),
    (["scorer.threshold.policy=fixed", "scorer=memoryd"],
     "scorer.threshold.policy is now threshold.policy: use threshold.policy=fixed"),
])
def test_the_old_threshold_spelling_names_the_new_one(args: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_overrides(["+experiment=three_pass", *args])
    assert str(caught.value) == message


@pytest.mark.bad_input
def test_a_threshold_left_under_the_scorer_in_a_yaml_is_refused() -> None:
    cfg = compose(["+experiment=three_pass", "+scorer.threshold.refresh=false"])
    with pytest.raises(ConfigError) as caught:
        validate(cfg)
    assert str(caught.value) == ("scorer.threshold is now threshold: a YAML file still sets "
                                 "scorer.threshold; move those settings to threshold")
