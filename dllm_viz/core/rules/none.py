"""``none``: a confirmed token is final (the article's loop): the step keeps the schedule's choice.

Example:

>>> from dllm_viz import DecodeConfig
>>> DecodeConfig().revise
'none'
"""
from __future__ import annotations

from dllm_viz.core.rules.base import Citation, Plan, Revision

RULE = Revision(
    name="none", order=0, plan=Plan.keep, summary="a confirmed token is final (the article's loop)",
    cite=Citation(repo="the source article", file="section 2", function="the decoding loop"),
)
