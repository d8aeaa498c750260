from __future__ import annotations

from dllm_viz.train.cli import log_to_stdout, main

log_to_stdout()
main()
