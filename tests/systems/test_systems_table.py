"""The printed comparison: each write-gate row carries recall with its CI, the judge calls it
spent and saved, and the paired difference with the first system."""

from __future__ import annotations

from memeval.reporting.systems_table import systems_summary


def test_the_write_gate_rows_show_recall_with_its_ci_and_the_paired_delta() -> None:
    row = {"substantive_recall": 0.991, "substantive_recall_ci95": [0.97, 1.0],
           "noise_stored": 0, "prejudge_filter_rate": 0.573, "judge_calls": 123,
           "judge_call_saving": 0.573, "entries": 288}
    other = {**row, "substantive_recall": 0.9, "substantive_recall_ci95": [0.85, 0.95],
             "judge_calls": 288, "judge_call_saving": 0.0, "prejudge_filter_rate": 0.0}
    table = {"pass": 3, "systems": {"reference": row, "keep-all": other},
             "paired": {"keep-all": {"recall": {"delta": -0.091, "delta_ci95": [-0.14, -0.05]},
                                     "mcnemar_recall": {"p_value": 0.0004},
                                     "mcnemar_decisions": {"p_value": 0.25}}}}
    outcomes, paired = systems_summary({"write_gate": table}, {}, {}).split("\n\n")
    lines = outcomes.splitlines()
    assert lines[0] == "write gate (pass 3)"
    assert lines[1].split("  ")[0] == "system" and "saved" in lines[1]
    assert lines[2].split() == ["reference", "99.1%", "[97–100]", "0", "57.3%", "123", "57.3%"]
    assert lines[3].split() == ["keep-all", "90.0%", "[85–95]", "0", "0.0%", "288", "0.0%"]
    assert lines[4].startswith("recall: ")  # the legend
    lines = paired.splitlines()
    assert lines[0] == "write gate (pass 3), against the first system"
    assert "McNemar p, recall" in lines[1] and "McNemar p, keep/drop" in lines[1]
    assert lines[2].split() == ["reference", "—", "—"]
    assert lines[3].split() == ["keep-all", "-9.1", "pt", "[-14,", "-5]", "0.000", "0.250"]
    assert lines[4].startswith("McNemar p, recall: on the substantive entries")
    assert max(len(line) for line in outcomes.splitlines() + paired.splitlines()) <= 100


def test_what_was_left_out_and_each_systems_notes_follow_the_tables() -> None:
    text = systems_summary({}, {"search": {"keep-all": "lacks search"}},
                           {"memledger": {"search_path": "sqlite-vec via sqlean"}})
    assert text.split("\n\n") == ["not measured: search: keep-all lacks search",
                                    "notes\n  memledger, search_path: sqlite-vec via sqlean"]


def test_the_ranking_follows_the_gate_tables_cheapest_first_with_its_neighbours() -> None:
    row = {"substantive_recall": 0.983, "substantive_recall_ci95": [0.97, 0.99],
           "noise_stored": 0, "prejudge_filter_rate": 0.544, "judge_calls": 848,
           "judge_call_saving": 0.544, "entries": 1861}
    ranking = {"weights": {"missed": 1.0, "noise": 0.5, "judged": 0.1}, "entries": 1861,
               "systems": {
                   "reference": {"rank": 1, "cost": 0.063, "cost_ci95": [0.052, 0.075],
                                 "missed": 0.017, "noise": 0.0, "judged": 0.456,
                                 "keeps_rank": 1.0},
                   "memledger": {"rank": 2, "cost": 0.5, "cost_ci95": [0.5, 0.5],
                                 "missed": 0.0, "noise": 1.0, "judged": 0.0,
                                 "keeps_rank": 0.97}},
               "neighbours": [{"better": "reference", "worse": "memledger", "delta": 0.437,
                               "delta_ci95": [0.425, 0.448], "separated": True}]}
    table = {"pass": 3, "splits": ["test4", "test5"], "ranking": ranking,
             "systems": {"reference": row, "memledger": row},
             "paired": {"memledger": {"recall": {"delta": 0.0, "delta_ci95": [0.0, 0.0]}}}}
    blocks = systems_summary({"write_gate": table}, {}, {}).split("\n\n")
    assert blocks[0].startswith("write gate (splits test4+test5, pass 3)\n")
    ranked, apart = blocks[2].splitlines(), blocks[3].splitlines()
    assert ranked[0] == ("write gate (splits test4+test5, pass 3), ranked by cost = "
                         "1·missed + 0.5·noise + 0.1·judged")
    assert ranked[2].split() == ["1", "reference", "0.063", "[0.052–0.075]", "1.7%", "0.0%",
                                 "45.6%", "100.0%"]
    assert ranked[3].split() == ["2", "memledger", "0.500", "[0.500–0.500]", "0.0%", "100.0%",
                                 "0.0%", "97.0%"]
    assert ranked[4].startswith("cost: the weights times missed")
    assert apart[2].split() == ["memledger", "−", "reference", "+0.437", "[+0.425,", "+0.448]",
                                "yes"]
    assert max(len(line) for block in blocks for line in block.splitlines()) <= 100
