from __future__ import annotations

import sys

from dllm_viz.train.cli import log_to_stdout, main

log_to_stdout()
if sys.argv[1:2] == ["renoise"]:  # the renoising DiffusionGemma world model (renoise_fit.py)
    from dllm_viz.train.renoise_fit import main as renoise_main

    renoise_main(sys.argv[2:])
else:
    main()
