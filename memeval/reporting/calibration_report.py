"""The report sections of an `mqs_calibration` run: MQS's calibration, configured and fitted out
of fold, and its agreement with the numeric trust grade."""

from __future__ import annotations

import pandas as pd

from memeval.reporting.outputs import Section
from memeval.results.sections import Mqs


def mqs_sections(mqs: Mqs | None) -> list[Section]:
    sections = []
    if mqs and mqs.configured:
        fitted = mqs.fitted_out_of_fold.scores() if mqs.fitted_out_of_fold else {}
        rows = [{"metric": m, "configured": value, "fitted out of fold": fitted.get(m)}
                for m, value in mqs.configured.scores().items()]
        sections.append(Section("MQS calibration", table=pd.DataFrame(rows)))
    if mqs and mqs.trust_grade:
        grade = mqs.trust_grade
        sections.append(Section(
            "MQS against the numeric trust grade", f"{grade.n} graded records.",
            pd.DataFrame([{"metric": m, "value": value, "95% CI": list(ci)} for m, value, ci in
                          (("spearman", grade.spearman, grade.spearman_ci95),
                           ("kendall", grade.kendall, grade.kendall_ci95))])))
    return sections
