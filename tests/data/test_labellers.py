"""The heuristic labeller reproduces the reference benchmark's rules, in order."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from memeval.data.labellers import LABELLERS, HeuristicLabeller
from memeval.entry import Entry
from memeval.registry import ConfigError

CONF = OmegaConf.to_container(OmegaConf.load("memeval/conf/labeller/heuristic.yaml"))


@pytest.fixture
def labeller() -> HeuristicLabeller:
    built = LABELLERS.build(CONF)
    assert isinstance(built, HeuristicLabeller)
    return built


@pytest.mark.parametrize(("text", "label"), [
    ("Done, tests pass.", "noise"),                                          # < 80
    ("Let me look at the scheduler module and the cron entries to see how the jobs "
     "get registered.", "noise"),                                            # ack opener < 200
    ("Now the config loader reads the YAML before the env vars so overrides never apply "
     "to the worker.", "noise"),                                             # regex opener < 200
    ("The worker pool is sized from CPU count, which inside the container reports the "
     "host's 64 cores; that is why memory blows up under load.", "low_value"),  # no rule fires
    ("Fix:\n```python\npool = Pool(int(os.environ['WORKERS']))\n```\n" + "a" * 400,
     "substantive"),                                                         # fence > 400
    ("Steps:\n" + "- point one is here\n" * 3 + "b" * 800, "substantive"),   # bullets > 800
    ("c" * 1300, "substantive"),                                             # > 1200
    ("d" * 900, "low_value"),                                                # 800 < n ≤ 1200
])
def test_rules_in_order(labeller: HeuristicLabeller, text: str, label: str) -> None:
    assert labeller.classify(text) == label


def test_labels_carry_the_versioned_source(labeller: HeuristicLabeller) -> None:
    (entry,) = labeller.label([Entry("x", "q", "ok")])
    assert (entry.label, entry.label_source) == ("noise", "heuristic-v1")


def test_bad_pattern_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="labeller 'heuristic'"):
        LABELLERS.validate({**CONF, "ack_pattern": "(unclosed"})
