"""`python -m memeval list`: everything it shows comes from memeval/conf/, the registries and the
schema dataclasses, so it names exactly what `run` accepts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from memeval.__main__ import main
from memeval.backends.embedders.base import EMBEDDERS
from memeval.backends.judges.base import JUDGES
from memeval.catalogue.options import catalogue, description
from memeval.config import compose, config_groups
from memeval.data.base import INPUTS, Inputs
from memeval.data.labellers import LABELLERS
from memeval.data.quality_sets import QUALITY_SETS
from memeval.engine.scorers.base import SCORERS
from memeval.experiments.base import EXPERIMENTS
from memeval.paths import CONF_DIR
from memeval.registry import Registry
from memeval.systems.base import SYSTEMS
from memeval.systems.reference.content_encoder import CONTENT_ENCODERS

pytestmark = pytest.mark.slow  # runs whole experiments or commands: not the quick tier

REGISTRIES: dict[str, Registry[Any] | Inputs] = {
    "dataset": INPUTS, "embedder": EMBEDDERS, "scorer": SCORERS, "judge": JUDGES,
    "labeller": LABELLERS, "system": SYSTEMS, "content_encoder": CONTENT_ENCODERS}


@pytest.fixture(scope="module")
def listed() -> dict[str, Any]:
    found = catalogue(None)
    return json.loads(json.dumps(found))  # what --json prints


def test_every_experiment_is_listed_with_what_it_sets(listed: dict[str, Any]) -> None:
    experiments = {e["name"]: e for e in listed["experiments"]}
    assert sorted(experiments) == sorted(p.stem for p in (CONF_DIR / "experiment").glob("*.yaml"))
    assert sorted(e["component"] for e in experiments.values()) == EXPERIMENTS.names()
    assert experiments["three_pass_mixed"]["sets"] == {"dataset": "mixed"}
    # knn_margin brings its own default threshold
    assert experiments["feedback_loop"]["sets"] == {"scorer": "knn_margin",
                                                    "threshold": "judge_quantile_empirical"}
    assert experiments["three_pass"]["sets"] == {}
    assert experiments["mqs_calibration"]["description"] == \
        "Is MQS calibrated, and does MAI label attribution right?"


def test_every_group_option_is_listed_with_its_component(listed: dict[str, Any]) -> None:
    groups = config_groups()
    components = listed["components"]
    assert set(components) == {*REGISTRIES, "gate", "threshold"}
    for group, entry in components.items():
        assert [o["name"] for o in entry["options"]] == groups[group]
        assert entry["default"] == compose(with_hydra=True).hydra.runtime.choices[group]
        for option in entry["options"]:
            assert option["description"], (group, option["name"])
            if group in REGISTRIES:
                assert option["component"] in REGISTRIES[group].names()
    minilm = next(o for o in components["embedder"]["options"] if o["name"] == "minilm")
    assert minilm["component"] == "sentence_transformers"
    yaml_settings = OmegaConf.to_container(OmegaConf.load(CONF_DIR / "embedder" / "minilm.yaml"))
    assert isinstance(yaml_settings, dict)
    assert minilm["settings"] == {k: v for k, v in yaml_settings.items() if k != "name"}
    memoryd = next(o for o in components["scorer"]["options"] if o["name"] == "memoryd")
    assert "defaults" not in memoryd["settings"] and "threshold" not in memoryd["settings"]


def test_every_group_is_listed_and_each_mounted_override_composes(
        listed: dict[str, Any]) -> None:
    mounted = listed["experiment_components"]
    groups = set(config_groups()) - {"experiment", "regression"}  # the gate's own thresholds
    assert groups <= {*listed["components"], *mounted}
    assert {"mqs", "trust", "conflict_detector", "dev_sets"} <= set(mounted)
    for group, entry in mounted.items():
        if group not in listed["components"]:
            assert [o["name"] for o in entry["options"]] == config_groups()[group]
            assert all(o["description"] for o in entry["options"])
        for where in entry["mounted"]:  # the override shown picks another option
            option = next((o for o in config_groups()[group] if o != where["default"]),
                          where["default"])
            cfg = compose([f"+experiment={where['experiment']}",
                           f"{where['override']}={option}"], with_hydra=True)
            assert cfg.hydra.runtime.choices[where["override"]] == option


def test_list_datasets_shows_each_setting_and_its_default(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "datasets"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("datasets (python -m memeval run")
    assert "path=data/labeled/write_gate_v1.jsonl" in out  # bundled files, relative to the checkout
    assert "path=???" in out  # labeled_jsonl: the user names the file
    assert "columns.user_prompt=user_prompt" in out  # nested settings as dotted keys
    assert "experiments" not in out and "embedder" not in out
    for option in config_groups()["dataset"]:  # a long name never runs into its description
        line = next(row for row in out.splitlines() if row.startswith(f"    {option}"))
        assert line == f"    {option}" or line.startswith(f"    {option}  "), line


def test_list_shows_experiments_then_components(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.index("experiments (") < out.index("components (")
    for option in [*config_groups()["experiment"], *config_groups()["judge"]]:
        assert f"  {option} " in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_list_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "components", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"components", "experiment_components"}


@pytest.mark.bad_input
def test_an_unknown_list_target_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["list", "experiment"])
    assert exit_.value.code == 2
    assert "invalid choice: 'experiment'" in capsys.readouterr().err


def test_a_description_is_the_opening_comment_s_first_sentence(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("# @package _global_\n# Does X, e.g. for Y (see\n# the card). More.\n"
                    "# Even more.\nname: x  # not this\n")
    assert description(path) == "Does X, e.g. for Y (see the card)."


def test_each_input_file_is_listed_with_the_fields_its_lines_take(listed: dict[str, Any]) -> None:
    inputs = {i["setting"]: i for e in listed["experiments"] for i in e["inputs"]}
    assert set(inputs) == {"experiment.records", "experiment.scenarios", "experiment.pairs",
                           "experiment.queries", "experiment.corpus",
                           "experiment.test_scenarios", "experiment.golden_style_scenarios"}
    assert inputs["experiment.pairs"]["default"] == "data/conflicts/memory_pairs_v1.jsonl"

    def names(setting: str, required: bool) -> set[str]:
        return {f["name"] for f in inputs[setting]["fields"] if f["required"] == required}

    assert names("experiment.pairs", True) == {"pair_id", "a", "b", "conflict"}
    assert names("experiment.pairs", False) == {"note"}
    assert names("experiment.queries", True) == {"query_id", "query", "relevant"}
    assert {"id", "content"} <= names("experiment.records", True)
    assert {"confidence", "citation", "label_note"} <= names("experiment.records", False)
    assert {"scenario_id", "ground_truth", "retrieved_memories"} == \
        names("experiment.scenarios", True)
    pair_id = next(f for f in inputs["experiment.pairs"]["fields"] if f["name"] == "pair_id")
    assert pair_id == {"name": "pair_id", "type": "text", "required": True}


def test_the_datasets_listing_names_each_quality_set_and_the_settings_that_read_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    found = json.loads(json.dumps(catalogue("datasets")))["quality_sets"]
    assert [kind["name"] for kind in found] == list(QUALITY_SETS)
    by_name = {kind["name"]: kind for kind in found}
    assert by_name["memory_records"]["read_by"] == {
        "experiment.records": ["compare_systems", "mqs_calibration"]}
    assert by_name["conflict_pairs"]["read_by"]["experiment.pairs"] == [
        "compare_systems", "conflict_detection"]
    assert main(["list", "datasets"]) == 0
    shown = capsys.readouterr().out
    assert "quality sets (python -m memeval run … experiment.SETTING=FILE.jsonl):" in shown
    assert "  retrieval_queries    retrieval queries: each line needs query_id, query and " \
           "relevant" in shown


def test_the_docs_configuration_table_names_every_option_of_each_group() -> None:
    """docs/index.md's table of groups lists each option `run` accepts; `factory` is named as
    the form a user types, `module:callable`."""
    index = (Path(__file__).parents[1] / "docs" / "index.md").read_text()
    table = index.partition("\n## Configuration\n")[2].partition("\n## ")[0]
    rows = re.findall(r"^\| ((?:`\w+`(?:, )?)+) \| ([^|\n]*) \|", table, re.MULTILINE)
    named = {group: options for groups, options in rows for group in re.findall(r"\w+", groups)}
    groups = config_groups()
    assert {"dataset", "system", "embedder"} <= set(named) <= set(groups)
    spelled = {"factory": "module:callable"}
    missing = [f"{group}={option}" for group, options in named.items() for option in groups[group]
               if f"`{spelled.get(option, option)}`" not in options]
    assert not missing
