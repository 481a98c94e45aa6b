"""Experiment names: what tells a dataset's experiments apart comes first, and an earlier
configuration's experiments are renamed when a new one makes a setting differ."""

from __future__ import annotations

from typing import Any

from memeval.reporting.phoenix.naming import differing, fitted_name, name, settings_apart

TOKENS = {"threshold": "t0.99", "seed": "s0", "embedder": "all-MiniLM-L6-v2",
          "scorer": "logistic", "judge": "labels"}


def metadata(run: str, lead: str = "p1", **changes: Any) -> dict[str, Any]:
    overrides = changes.pop("overrides", {})
    return {"memeval_run_id": run, "experiment": "three_pass", "lead": lead,
            "tokens": {**TOKENS, **changes}, "overrides": overrides}


def test_experiment_names_lead_with_what_tells_them_apart() -> None:
    name = fitted_name("p2", ["t0.99", "s0", "logistic", "anthropic"], "three_pass")
    assert name == "p2 t0.99 s0 logistic anthropic | three_pass"
    # Phoenix's list shows about 22 characters: pass, cut and seed are all inside them
    assert name[:22] == "p2 t0.99 s0 logistic a"
    tail_cut = fitted_name("memoryd p3", ["t0.98", "s12", "knn_margin", "openai_chat"],
                           "compare_systems_on_a_long_experiment_name")
    assert len(tail_cut) == 60 and tail_cut.endswith("...")
    assert tail_cut.startswith("memoryd p3 t0.98 s12 knn_margin openai_chat | compare_")
    squeezed = fitted_name("p1", ["t0.99", "s0", "a_very_long_scorer_name_from_a_plugin_module",
                                  "another_long_judge_name"], "three_pass")
    assert len(squeezed) <= 60 and squeezed.startswith("p1 t0.99 s0 a_very_long")
    assert "..." in squeezed and "three_pass" not in squeezed  # the tail goes before settings
    assert squeezed.isascii()  # Phoenix's downloads name their file after it, in a header


def test_two_runs_differing_only_in_embedder_are_named_apart_within_22_characters() -> None:
    minilm = metadata("a", overrides={})
    hashing = metadata("b", embedder="hashing-v1-256", overrides={"embedder": "hashing"})
    varying = differing([minilm, hashing])
    assert varying == ["embedder"]
    names = [name(m, varying, "three_pass") for m in (minilm, hashing)]
    assert names == ["p1 all-MiniLM-L6-v2 t0.99 s0 logistic labels | three_pass",
                     "p1 hashing-v1-256 t0.99 s0 logistic labels | three_pass"]
    assert names[0][:22] != names[1][:22]
    # alone on its dataset, a run's name keeps the usual order
    assert name(minilm, differing([minilm]), "three_pass").startswith("p1 t0.99 s0 ")


def test_a_setting_no_token_names_is_named_by_its_key_and_value() -> None:
    tuned = metadata("a", overrides={"gate.write.dedup_threshold": "0.9"})
    varying = differing([tuned, metadata("b")])
    assert name(tuned, varying, "three_pass").startswith("p1 dedup_threshold=0.9 t0.99")
    assert name(metadata("b"), varying, "three_pass").startswith(
        "p1 dedup_threshold=default t0.99")


class Renames:
    def __init__(self) -> None:
        self.updates: list[tuple[str, str]] = []

    def update_experiment(self, experiment_id: str, new: str, description: str,
                          metadata: Any) -> None:
        self.updates.append((experiment_id, new))


def test_a_new_configuration_renames_the_earlier_runs_experiments() -> None:
    alone = "t0.99 s0 all-MiniLM-L6-v2 logistic labels | three_pass"
    earlier = [{"id": f"e{p}", "name": f"p{p} {alone}", "description": "",
                "metadata": metadata("a", f"p{p}")} for p in (1, 2)]
    legacy = {"id": "old", "name": "kept", "metadata": {"memeval_run_id": "z"}}
    rest = Renames()
    varying = settings_apart(rest, [*earlier, legacy], "b",  # type: ignore[arg-type]
                             metadata("b", embedder="hashing-v1-256"))
    assert varying == ["embedder"]
    assert rest.updates == [
        ("e1", "p1 all-MiniLM-L6-v2 t0.99 s0 logistic labels | three_pass"),
        ("e2", "p2 all-MiniLM-L6-v2 t0.99 s0 logistic labels | three_pass")]
    rest.updates.clear()  # the same configuration again renames nothing
    settings_apart(rest, earlier, "c", metadata("c"))  # type: ignore[arg-type]
    assert rest.updates == []
