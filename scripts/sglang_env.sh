#!/usr/bin/env bash
# Builds the separate Python environment in which tests/sglang/ run against the real SGLang.
#
#   bash scripts/sglang_env.sh [VENV]     # default: $DLLM_VIZ_SGLANG_VENV, else <repo>/.venv-sglang
#
# Why separate: the SGLang wheel pins a CUDA torch and dozens of CUDA kernels. Here it is installed
# with --no-deps next to the project's CPU torch (the exact wheel the project pins, from
# /opt/wheels or $DLLM_VIZ_TORCH_WHEEL), plus only the pure-Python packages (and triton and
# tvm-ffi, which install on any x86 Linux) that importing `sglang.srt.dllm` needs, plus an
# import-only stub of torchvision (PyPI has only CUDA builds of it, which fail to load on CPU torch).
# The project itself (the plugin) is then installed with its dependencies resolved, under the same
# pins: its ranges (pyproject.toml, the [hf] extra included) accept SGLang's transformers 5.19.
# No system site-packages: nothing the main environment upgrades can change this one.
#
# Idempotent: a stamp records what was built; with a matching stamp the script exits at once.
# Any failure exits non-zero with a message and removes the half-built environment.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-${DLLM_VIZ_SGLANG_VENV:-$repo/.venv-sglang}}"
py="${PYTHON:-python3}"
say() { echo "sglang_env.sh: $*" >&2; }

# Versions come from their one place: SGLang from the plugin package, torch from requirements.txt.
sglang_version="$("$py" - "$repo/dllm_viz/serve/__init__.py" <<'EOF'
import ast, sys
for node in ast.parse(open(sys.argv[1], encoding="utf-8").read()).body:
    if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "SGLANG_VERSION" for t in node.targets):
        print(node.value.value)
EOF
)"
torch_version="$(sed -n 's/^torch==\([0-9.]*\).*/\1/p' "$repo/requirements.txt")"
[ -n "$sglang_version" ] || { say "cannot read SGLANG_VERSION from dllm_viz/serve/__init__.py"; exit 1; }
[ -n "$torch_version" ] || { say "cannot read the torch==X pin from requirements.txt"; exit 1; }

# The CPU torch wheel: never let pip pick torch from PyPI (a multi-GB CUDA build).
wheel="${DLLM_VIZ_TORCH_WHEEL:-}"
if [ -z "$wheel" ]; then
  wheel="$(ls /opt/wheels/torch-"$torch_version"+cpu-*.whl 2>/dev/null | head -n1 || true)"
fi
[ -f "$wheel" ] || { say "no CPU wheel of torch $torch_version (looked in /opt/wheels; set DLLM_VIZ_TORCH_WHEEL)"; exit 1; }

# Top-level packages that `import sglang.srt.dllm.algorithm` needs on CPU, pinned as verified;
# pip resolves their own dependencies under a constraint that holds torch at the CPU wheel.
packages=(
  "numpy==2.4.6" "PyYAML==6.0.4" "triton==3.9.0" "apache-tvm-ffi==0.1.11" "transformers==5.19.0"
  "orjson==3.13.0" "psutil==7.2.2" "pybase64==1.5.1" "requests==2.34.2" "packaging==26.4" "pillow==13.0.0"
  "msgspec==0.23.0" "pyzmq==27.3.0" "tqdm==4.70.1" "ipython==9.18.1" "pydantic==2.14.4" "aiohttp==3.14.5"
  "dill==0.4.1" "sentencepiece==0.2.1" "compressed-tensors==0.18.0" "gguf==0.19.0" "openai==2.8.0"
  "partial-json-parser==0.2.1.1.post7" "uvicorn==0.54.0" "fastapi==0.165.0" "einops==0.8.2"
  "setuptools>=68" "pytest>=9,<10"
)

# The base (SGLang and its packages) is rebuilt when anything above the end-of-base marker changes;
# the project is reinstalled when its pyproject.toml or the lines below the marker change.
marker='^# ---- end of the base environment ----$'
base_stamp="$(printf '%s\n' "$sglang_version" "$torch_version" "$(basename "$wheel")" | cat - <(sed -n "1,/$marker/p" "$0") \
  | sha256sum | cut -c1-16)"
project_stamp="$(printf '%s\n' "$repo" | cat - "$repo/pyproject.toml" <(sed -n "/$marker/,\$p" "$0") | sha256sum | cut -c1-16)"

mkdir -p "$(dirname "$venv")"
lock="${TMPDIR:-/tmp}/dllm-viz-sglang-env.$(printf %s "$venv" | sha256sum | cut -c1-12).lock"
exec 9>"$lock"
flock 9  # two test runs building at once would corrupt the environment

if [ "$(cat "$venv/.dllm-viz-base" 2>/dev/null)" != "$base_stamp" ] || [ ! -x "$venv/bin/python" ]; then
  say "building $venv (sglang==$sglang_version, torch $torch_version CPU); a few minutes, about 2.5 GB"
  start=$SECONDS
  rm -rf "$venv"
  trap 'say "FAILED; removing the half-built $venv"; rm -rf "$venv"' ERR
  "$py" -m venv "$venv"
  pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
  constraints="$venv/constraints.txt"  # also holds the project's install below to these versions
  printf '%s\n' "torch==$torch_version" "${packages[@]}" >"$constraints"
  "${pip[@]}" install "$wheel"
  "${pip[@]}" install -c "$constraints" "${packages[@]}"
  "${pip[@]}" install --no-deps "sglang==$sglang_version"

  # Import-only torchvision stand-in: module attributes resolve to placeholders that raise when
  # called, so SGLang's and transformers' module-level imports succeed and nothing uses it.
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  "$venv/bin/python" - "$site" <<'EOF'
import pathlib, sys
root = pathlib.Path(sys.argv[1]) / "torchvision"
stub = '''"""Placeholder attributes of the torchvision stub (dllm-viz SGLang test environment)."""
class Missing:
    def __init__(self, name):
        self._name = name
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Missing(f"{self._name}.{attr}")
    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name}: torchvision is an import-only stub in this environment")
def module_getattr(module):
    def __getattr__(attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Missing(f"{module}.{attr}")
    return __getattr__
'''
interp = '''import enum
class InterpolationMode(enum.Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"
'''
files = {
    "_stub.py": stub,
    "__init__.py": "__version__ = '0.0.0+dllm-viz-stub'\n",
    "io/__init__.py": "",
    "transforms/__init__.py": interp,
    "transforms/functional.py": "from torchvision.transforms import InterpolationMode\n",
    "transforms/v2/__init__.py": "",
    "transforms/v2/functional.py": "from torchvision.transforms import InterpolationMode\n",
}
for rel, text in files.items():
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    module = "torchvision" + ("." + rel[:-3].replace("/", ".").removesuffix(".__init__") if rel != "__init__.py" else "")
    hook = "" if rel == "_stub.py" else f"from torchvision._stub import module_getattr\n__getattr__ = module_getattr({module!r})\n"
    path.write_text(text + hook, encoding="utf-8")
EOF

  # Fail here, not in the tests, when the environment cannot do what the tests need.
  "$venv/bin/python" - "$torch_version" "$sglang_version" <<'EOF'
import sys, warnings
warnings.simplefilter("ignore")
import torch
assert torch.__version__ == sys.argv[1] + "+cpu", f"torch {torch.__version__} is not the CPU build {sys.argv[1]}"
import sglang
assert sglang.__version__ == sys.argv[2], f"sglang {sglang.__version__} != {sys.argv[2]}"
from sglang.srt.dllm.algorithm import algo_name_to_cls
from sglang.srt.dllm.algorithm.base import DllmAlgorithm
assert "LowConfidence" in algo_name_to_cls, f"SGLang's built-in algorithms did not import: {sorted(algo_name_to_cls)}"
EOF
  trap - ERR
  echo "$base_stamp" >"$venv/.dllm-viz-base"
  rm -f "$venv/.dllm-viz-project"
  say "built in $((SECONDS - start)) s, $(du -sh "$venv" | cut -f1)"
fi
# ---- end of the base environment ----

# The project itself, editable, its dependencies resolved (the [hf] extra too) under the base's
# constraints: pip fails here if a range in pyproject.toml excludes a version SGLang pins, instead
# of installing something the tests then trip over. Its entry points (the SGLang plugin) are then
# registered exactly as `pip install dllm-viz` would register them.
if [ "$(cat "$venv/.dllm-viz-project" 2>/dev/null)" != "$project_stamp" ]; then
  "$venv/bin/python" -m pip --disable-pip-version-check -q install -c "$venv/constraints.txt" --no-build-isolation \
    -e "$repo[hf]"
  echo "$project_stamp" >"$venv/.dllm-viz-project"
fi
say "ready: $venv"
