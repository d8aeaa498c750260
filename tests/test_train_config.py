"""train.config: the recipe refuses bad values by name."""
from __future__ import annotations

from dataclasses import replace

import pytest

from tests.train_corpus import TINY


@pytest.mark.parametrize("field, value",
                         [("batch_size", 0), ("lr", 0.0), ("short_fraction", 1.5), ("rare_first_fraction", -0.1),
                          ("t_min", 0.0), ("edit_fraction", 1.5), ("edit_rate", -0.1)])
def test_train_config_rejects_bad_values(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        replace(TINY, **{field: value})
