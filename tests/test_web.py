"""app/views/web.py: what the renderer is given once (`options`). Gradio's HTML component hands each option to the
page's script as a parameter of its own, so each name must be a JavaScript identifier that is no reserved word (a
`switch` option once broke the whole page: "Unexpected token 'switch'"). The settings a page's fork may switch."""
from __future__ import annotations

import re

from dllm_viz import DecodeConfig
from dllm_viz.app.views import web
from dllm_viz.core import rules
from dllm_viz.core.fork import FIXED

# ECMAScript's reserved words, and the strict mode's (Gradio compiles the script as a function body)
RESERVED = set("""break case catch class const continue debugger default delete do else enum export extends false
finally for function if import in instanceof new null return super switch this throw true try typeof var void while
with yield let static implements interface package private protected public await arguments eval""".split())


def test_every_option_is_a_name_the_pages_script_can_take_as_a_parameter():
    for name in web.options(("a-model",)):
        assert re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$]*", name) and name not in RESERVED, name


def test_a_fork_may_switch_the_masked_canvass_settings_that_core_fork_lets_switch_with_their_defaults():
    switch = web.switchable()
    defaults = DecodeConfig().to_dict()
    assert switch and all(switch[k] == defaults[k] for k in switch)
    assert not set(switch) & set(FIXED) and all("masked" in rules.applies(k) for k in switch)
    assert "temperature" in switch and "entropy_bound" not in switch  # a renoising canvas's knob is not offered
    # the knob table's order, the seed (every canvas's) last
    assert list(switch) == [k.name for k in rules.KNOBS if k.name in switch and k.name != "seed"] + ["seed"]
    renoise = web.switchable("renoise")  # a renoising canvas's: its own knobs, then the seed; not its lengths
    assert list(renoise)[0] == "entropy_bound" and list(renoise)[-1] == "seed"
    assert not set(renoise) & {"canvas_length", "temperature"}
    assert web.options()["switchable"] == {"masked": switch, "renoise": renoise}
