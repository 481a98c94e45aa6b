"""Each setting in one place: memledger's MQS constants and confidence gate live in one config
group each (conf/mqs/, conf/confidence_policy/), equal to the dataclass defaults, and every
experiment that scores MQS composes them in at the path its documented overrides use."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

import conf
from memeval.config import compose
from memeval.quality.mqs import MQSConstants
from memeval.quality.policy import ConfidencePolicy

CONF = Path(conf.__file__).parent
GROUPS = {"mqs": MQSConstants, "confidence_policy": ConfidencePolicy}
# Where each experiment puts the two groups.
PLACES = {"mqs_calibration": "experiment", "three_pass": "experiment.stored_mqs",
          "three_pass_mixed": "experiment.stored_mqs"}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_the_yaml_holds_the_dataclass_defaults(group: str) -> None:
    assert yaml.safe_load((CONF / group / "memledger.yaml").read_text()) == asdict(GROUPS[group]())


def test_no_experiment_yaml_repeats_the_constants() -> None:
    for path in (CONF / "experiment").glob("*.yaml"):
        text = path.read_text()
        assert "confidence_points:" not in text and "filter_below:" not in text, path


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
