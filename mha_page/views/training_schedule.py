"""The training widget's schedule: how many steps a run trains, how often it is logged and checkpointed, and in
which precision. Every run the widget shows follows it: the recorded one, trained when the site is built, and the
reader's, trained live in the page's Python."""
from __future__ import annotations

import numpy as np

from mha_core.model import TrainConfig
from mha_core.training import Trainer

SCHEDULE = {"steps": 600, "log_every": 10, "checkpoint_every": 30}  # a run as the widget shows it
SCHEDULE_DTYPE = np.float32  # the widget's runs, built and live, train in float32


def schedule_trainer(config: TrainConfig, seed: int) -> Trainer:
    """A run on the widget's schedule (SCHEDULE, SCHEDULE_DTYPE)."""
    return Trainer(config, seed, SCHEDULE["log_every"], SCHEDULE["checkpoint_every"], SCHEDULE_DTYPE)
