"""``none`` (the insert/delete kind): positions never move; a step confirms, takes back or rewrites in place.

Example:

>>> from dllm_viz import DecodeConfig
>>> DecodeConfig().indel
'none'
"""
from __future__ import annotations

from dllm_viz.core.rules.base import CANVASES, Citation, InDel

RULE = InDel(
    name="none", order=0, canvases=CANVASES, summary="positions stay: nothing is inserted or deleted",
    cite=Citation(repo="the source article", file="section 2", function="the decoding loop"),
)
