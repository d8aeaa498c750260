"""app/errors.py: a user's ValueError is a visible gr.Error and one log line, never a printed traceback."""
from __future__ import annotations

import logging

import gradio as gr
import pytest

from dllm_viz.app.errors import user_errors


def test_a_value_error_becomes_a_quiet_gr_error_and_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    @user_errors
    def handler(x: float) -> float:
        raise ValueError(f"temperature={x} is invalid:\n expected a number in [0, 100]")

    with caplog.at_level(logging.WARNING, logger="dllm_viz.app.errors"):
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
