from __future__ import annotations

import sys

from dllm_viz.cli import main

sys.exit(main())
