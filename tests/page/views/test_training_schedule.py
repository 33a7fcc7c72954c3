"""views/training_schedule.py: a run on the widget's schedule logs, checkpoints and trains as SCHEDULE says."""

import numpy as np

from mha_page.views.training_schedule import SCHEDULE, SCHEDULE_DTYPE, schedule_trainer
from mha_core.model import TrainConfig

SMALL = TrainConfig(vocab=8, d_model=8, n_layers=1, n_heads=1, d_head=4, seq_len=10, batch=3, min_period=2, max_period=4)


def test_a_run_on_the_schedule_logs_and_keeps_checkpoints_at_its_intervals_in_its_precision():
    trainer = schedule_trainer(SMALL, 5)
    trainer.run(2 * SCHEDULE["checkpoint_every"])
    assert [h["step"] for h in trainer.history] == list(range(0, trainer.step + 1, SCHEDULE["log_every"]))
    assert [c["step"] for c in trainer.checkpoints] == list(range(0, trainer.step + 1, SCHEDULE["checkpoint_every"]))
    assert all(p.dtype == SCHEDULE_DTYPE for p in trainer.checkpoints[-1]["params"].values())
    assert SCHEDULE["steps"] % SCHEDULE["checkpoint_every"] == 0 and np.dtype(SCHEDULE_DTYPE).itemsize == 4
