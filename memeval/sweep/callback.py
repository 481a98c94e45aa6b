"""The Hydra callback memeval/conf/config.yaml names: a multirun ends with its sweep table and,
when it varied the seed, the spread over seeds, as `python -m memeval sweep` prints them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from memeval.results.result import UnreadableResult
from memeval.sweep.summary import SweepError, report_sweep
from memeval.user_errors import complain


class SweepSummary(Callback):
    """Prints the finished multirun's summary."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from hydra.core.global_hydra import GlobalHydra
        from hydra.initialize import get_gh_backup, restore_gh_from_backup

        # The summary composes each experiment's defaults (to mark the default run): Hydra's
        # own state is set aside meanwhile and restored, as Hydra's initialize() does.
        backup = get_gh_backup()
        GlobalHydra.instance().clear()
        try:
            print()
            print(report_sweep(Path(config.hydra.sweep.dir)))
        except (SweepError, UnreadableResult) as err:  # the runs' own results stay as written
            complain(f"memeval sweep: {err}")
        finally:
            restore_gh_from_backup(backup)
