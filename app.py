"""The playground, served: `python app.py` is `dllm-viz serve` (Hugging Face Spaces runs this file).

`python app.py --help` lists the flags; the code is in the package: `dllm_viz/app/main.py` (flags,
allocator) and `dllm_viz/app/serve.py` (model, engine, demo, launch).
"""
import sys

from dllm_viz.app.main import main

if __name__ == "__main__":
    sys.exit(main(prog="python app.py"))
