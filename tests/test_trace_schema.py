"""core/trace_schema.py: a NaN anywhere in a list of numbers is refused, not only in first place."""
from __future__ import annotations

import json
import math

import pytest

from dllm_viz import Trace
from tests.test_trace import make_trace


def test_min_and_max_do_not_see_a_nan_after_the_first_item():
    # Why the schema cannot lean on min/max alone: NaN compares false, so it never wins either.
    assert min([0.5, math.nan]) == 0.5 and max([0.5, math.nan]) == 0.5


@pytest.mark.parametrize(("field", "index", "path"), [
    ("confidence", 1, r"steps\[0\]\.confidence\[1\]=nan"),
    ("confidence", 2, r"steps\[0\]\.confidence\[2\]=nan"),
    ("logprobs", 1, r"steps\[0\]\.logprobs\[1\]=nan"),
    ("candidate_probs", (0, 1), r"steps\[0\]\.candidate_probs\[0\]\[1\]=nan"),
])
def test_from_dict_refuses_a_nan_in_any_place(field, index, path):
    d = json.loads(make_trace().to_json())
    assert Trace.from_dict(d).to_json() == make_trace().to_json()  # the untouched trace loads
    target = d["steps"][0][field]
    if isinstance(index, tuple):
        target, index = target[index[0]], index[1]
    target[index] = math.nan
    with pytest.raises(ValueError, match=path):
        Trace.from_dict(d)


def test_a_nan_first_and_an_infinity_anywhere_are_refused_too():
    for value, index in ((math.nan, 0), (math.inf, 1), (-math.inf, 2)):
        d = json.loads(make_trace().to_json())
        d["steps"][0]["confidence"][index] = value
        with pytest.raises(ValueError, match=rf"steps\[0\]\.confidence\[{index}\]"):
            Trace.from_dict(d)
