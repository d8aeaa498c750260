"""app/handlers/errors.py: a user's ValueError is a visible gr.Error and one log line, never a printed traceback."""
from __future__ import annotations

import logging

import gradio as gr
import pytest

from dllm_viz.app.handlers.errors import Localized, localize, user_errors


def test_a_value_error_becomes_a_quiet_gr_error_and_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    @user_errors
    def handler(x: float) -> float:
        raise ValueError(f"temperature={x} is invalid:\n expected a number in [0, 100]")

    with caplog.at_level(logging.WARNING, logger="dllm_viz.app.handlers.errors"):
        with pytest.raises(gr.Error) as err:
            handler(1e9)
    assert err.value.message.startswith("temperature=1000000000.0 is invalid")
    assert err.value.print_exception is False  # Gradio prints no traceback for it
    (record,) = caplog.records
    assert record.getMessage() == ("user error in handler: temperature=1000000000.0 is invalid: "
                                   "expected a number in [0, 100]")


def test_other_exceptions_are_bugs_and_pass_through(caplog: pytest.LogCaptureFixture) -> None:
    @user_errors
    def handler() -> None:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        handler()
    assert not caplog.records
    assert user_errors(lambda: 3)() == 3


def test_a_user_error_echoing_markup_is_shown_as_text():
    """Gradio renders an error toast as HTML; a value echoed in the message must not become a tag."""
    def handler():
        raise ValueError('config_json=\'<img src="http://198.51.100.7/p.png">\' is invalid')

    with pytest.raises(gr.Error) as err:
        user_errors(handler)()
    assert "<img" not in err.value.message and """'&lt;img src="http://198.51.100.7/p.png"&gt;'""" in err.value.message


def test_a_localized_error_is_shown_in_its_language_and_logged_in_english(caplog: pytest.LogCaptureFixture) -> None:
    english = "config B: temperature='hot' is invalid: expected 0 (argmax) or a number in [0.0001, 3.40282e+38]"

    def handler() -> None:
        raise Localized(localize(english, "zh"), english)

    with caplog.at_level(logging.WARNING, logger="dllm_viz.app.handlers.errors"):
        with pytest.raises(gr.Error) as err:
            user_errors(handler, duration=None)()
    assert err.value.message.startswith("配置 B：temperature='hot' 无效：应为") and err.value.duration is None
    assert caplog.records[0].getMessage() == f"user error in handler: {english}"


@pytest.mark.parametrize(("english", "zh"), [
    ("top_k=0 is invalid: expected an integer in [1, 9223372036854775807]",
     "top_k=0 无效：应为 [1, 9223372036854775807] 内的整数"),
    ("schedule='x' is invalid: expected one of topk_decay | threshold",
     "schedule='x' 无效：应为以下之一：topk_decay | threshold"),
    ("config A: block_length=7 is invalid: expected a divisor of gen_length=16",
     "配置 A：block_length=7 无效：应为 gen_length=16 的约数"),
    ("trace file: nothing was uploaded", "轨迹文件：没有上传任何文件"),
    ("something new", "出错了：something new"),  # a shape not known yet: still said in 中文 around it
    ("model_pick='world-renoise' is invalid for the Sweep: its canvas is 'renoise', and the grid's knobs (temperature, "
     "top_k, decay) are the masked canvas's; expected a masked model",
     "参数扫描不能用于 'world-renoise'：它的画布是 'renoise'，"
     "而扫描的参数（temperature、top_k、decay）属于掩码画布；请选择一个掩码模型。"),
    ("config A: top_k=4 is invalid for 'world-renoise', whose canvas is 'renoise': the knob applies to masked canvases "
     "only; expected its default None (a renoise canvas reads gen_length, seed)",
     "配置 A：top_k=4 对 'world-renoise' 无效：它的画布是 'renoise'，这个参数只用于 masked 画布；应为默认值 None"
     "（这种画布读取的参数：gen_length, seed）"),
    ("acceptance_from='raw' is invalid for 'world-mdlm', whose canvas is 'masked': the knob applies to renoise "
     "canvases only; expected its default None (a masked canvas reads the masked canvas's schedules, revision rules "
     "and their knobs)",
     "acceptance_from='raw' 对 'world-mdlm' 无效：它的画布是 'masked'，这个参数只用于 renoise 画布；应为默认值 None"
     "（这种画布读取的参数：掩码画布的调度、修订规则及其参数）"),
    ("lesson='global' is invalid for 'world-renoise', whose canvas is 'renoise': the lessons compare masked decodes; "
     "expected a masked model (or configs A and B of its own knobs)",
     "课题 'global' 不能在 'world-renoise' 上运行：它的画布是 'renoise'，"
     "课题对比的是掩码解码；请选择一个掩码模型（或在配置 A、B 中写它自己的参数）。"),
])
def test_localize_renders_the_checks_shapes(english: str, zh: str) -> None:
    assert localize(english, "zh") == zh and localize(english, "en") == english
