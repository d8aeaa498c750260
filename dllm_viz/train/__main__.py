from __future__ import annotations

from dllm_viz.train.train import main

main()
