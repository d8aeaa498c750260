"""Insert/delete edits on the world model (issue 37): the llada22_indel floor and the counted lesson.

Every run goes through `dllm_viz.decode` (the step core's insert/delete rule); the measurement, the first
drafts with a word missing or doubled and the JointThreshold comparison are `dllm_viz.studies.indel_lessons`
(its docstring says what each figure is). This is the floor's command:

    python bench/indel_world.py                                  # dllm_viz/assets/world-indel
    python bench/indel_world.py --model RUN_EXPORT --json out.json
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dllm_viz.studies.indel_lessons import main  # noqa: E402

if __name__ == "__main__":
    main()
