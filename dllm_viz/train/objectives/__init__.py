"""Training objectives, one module each, discovered: a module here that sets ``OBJECTIVE = TheClass``
(a subclass of `base.Objective`) is found by `OBJECTIVES`, and a recipe picks it by its own fields
(`Objective.selected`); none selected: the default, `masked` (MDLM).

Adding an objective: its module here (the class: `selected`, `for_run`, `corrupt`, `loss`,
`heldout_figures`, optionally `can_edit`; subclass `masked.MaskedObjective` to keep its masks or its
held-out ELBO), its knobs in `train.config.TrainConfig` (the command line derives their flags), and
its test. Nothing else lists objectives.
"""

from __future__ import annotations

import importlib
import pkgutil

from dllm_viz.train.config import TrainConfig
from dllm_viz.train.objectives.base import Corrupted, Net, Objective

DEFAULT = "masked"  # what a recipe that selects no other objective trains


def _discover() -> dict[str, type[Objective]]:
    """Every ``OBJECTIVE`` of this package's modules, by name, in the order of the module names."""
    found: dict[str, type[Objective]] = {}
    for info in pkgutil.iter_modules(__path__):
        objective = getattr(importlib.import_module(f"{__name__}.{info.name}"), "OBJECTIVE", None)
        if objective is not None:
            found[objective.name] = objective
    return found


OBJECTIVES: dict[str, type[Objective]] = _discover()


def objective_for(cfg: TrainConfig) -> type[Objective]:
    """The objective ``cfg`` selects; ValueError naming them when it selects several."""
    chosen = [objective for objective in OBJECTIVES.values() if objective.selected(cfg)]
    if len(chosen) > 1:
        raise ValueError(f"the recipe selects {len(chosen)} objectives ({', '.join(o.name for o in chosen)}): "
                         "expected at most one; turn the others' options off")
    return chosen[0] if chosen else OBJECTIVES[DEFAULT]


__all__ = ["DEFAULT", "OBJECTIVES", "Corrupted", "Net", "Objective", "objective_for"]
