"""Test-wide settings, the test tiers, and the one `python app.py` the server tests share.

Settings: one torch thread (the suite's models are tiny; thread start-up costs more than it saves
on a 2-core machine), and no network for Hugging Face code.

Tiers (markers registered in pyproject.toml): `browser` (drives Chromium), `sglang` (builds or
uses the separate SGLang environment), `long` (tens of seconds each, repeating at scale what a
faster test checks: floors over 64 seeded runs, grids, stress, training end to end), `slow`
(everything that boots a server, starts a Python process that imports the heavy libraries,
trains, builds a wheel, or decodes hundreds of runs; browser, sglang and long tests are slow too).
`python -m pytest` runs the default tier, everything but `long` and `sglang` (pyproject.toml's
addopts: minutes, see the README); `python -m pytest -m "long or sglang"` the rest;
`python -m pytest -m "not slow"` is the development loop; `-m ""` runs everything. Marks are given
here by file or test name (`MARKS`), so a test file stays a plain list of tests;
tests/test_tiers.py checks every name still exists.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
torch.set_num_threads(1)

ROOT = Path(__file__).resolve().parents[1]

# File, or file::test (every parametrisation), -> its marks besides `slow`, which all of them get.
# Measured with --durations on the 2-core build machine; the fast tier keeps each module's own
# unit tests and drops what costs seconds each.
MARKS: dict[str, tuple[str, ...]] = {
    "tests/test_browser.py": ("browser",),
    "tests/test_browser_newcomer.py": ("browser",),  # issue 41's floors: a test per item
    "tests/test_browser_renoise.py": ("browser",),  # the renoising world model's widgets
    "tests/test_page_js.py": ("browser",),  # the page's script in Chromium, on a blank page (no server)
    "tests/test_sglang_env.py": ("sglang",),
    "tests/sglang": ("sglang",),  # inside the SGLang environment (test_sglang_env.py runs them)
    "tests/test_readme.py": (),  # installs requirements.txt, serves the README's app.py on port 7860
    "tests/test_wheel.py": (),  # builds the wheel, installs it into a venv
    "tests/test_train_gpu.py": ("long",),  # runs scripts/train_gpu.sh end to end
    "tests/test_offline.py": (),  # python processes under a network audit (one is the shared app.py)
    "tests/test_api.py::test_app_py_serves_the_embedded_model": (),
    "tests/test_adversarial.py::test_random_requests_from_concurrent_clients_match_each_request_alone": ("long",),
    "tests/test_ui.py::test_ui_module_loads_no_model_on_import": (),  # a fresh process imports gradio
    "tests/test_ui.py::test_every_preset_after_every_other_one_gives_its_own_whole_state": ("long",),  # 49 decodes
    "tests/test_world_model.py::test_quality_preset_meets_the_floor_over_64_seeded_runs": ("long",),
    "tests/test_world_model.py::test_the_model_breaks_names_where_the_perfect_one_does": ("long",),
    "tests/test_world_indel.py::test_llada22_indel_meets_the_floor_over_64_seeded_runs": ("long",),  # 128 decodes
    "tests/test_world_indel.py::test_the_counted_lesson_insert_and_delete_fix_what_rewriting_cannot": ("long",),  # 256
    "tests/test_world_model.py::test_parallel_decoding_breaks_names": ("long",),
    "tests/test_shipped_presets.py::test_presets_reach_the_cli": (),  # CLI processes
    "tests/test_train_cli.py::test_the_command_line_prints_progress_and_warnings_as_plain_lines": (),
    "tests/test_world_renoise_model.py::test_generate_writes_valid_sentences_at_the_shipped_settings": (),  # 17 runs
    "tests/test_train_renoise.py::test_a_tiny_run_learns_logs_resumes_exactly_and_exports": (),  # three runs, an export
    "tests/test_train_renoise.py::test_the_command_line_trains_and_exports": (),
    "tests/test_compare_models.py::test_rescore_json_adds_the_gain_figures": ("long",),
    "tests/test_policy.py::test_seeds_are_stable_across_processes_and_distinct": (),
    "tests/test_embedded.py::test_the_shipped_model_decodes_a_request_the_same_in_any_batch": (),
    "tests/test_revision.py::test_wino_on_the_world_model_counts_its_verify_passes": (),  # one verify canvas per token
    # Fast-dLLM's own loops beside ours, over the grid of block lengths and step counts (issue 31).
    "tests/test_cache_fast_dllm.py::test_world_model_cached_decode_is_fast_dllm_token_for_token": ("long",),
    "tests/test_cache_fast_dllm.py::test_austen_model_cached_decode_is_fast_dllm_token_for_token": ("long",),
    # The originals beside the presets (issue 40): a few cases of each named difference stay in the fast tier.
    "tests/test_as_shipped_remdm.py::test_remdm_preset_is_remdm_step_by_step_over_the_grid": (),
    "tests/test_as_shipped_remdm.py::test_remdm_preset_follows_remdm_s_distribution_step_by_step": (),  # 400 runs
    "tests/test_as_shipped_rcr.py::test_rcr_preset_is_mdpo_step_by_step_over_the_grid": (),
    "tests/test_as_shipped_wino.py::test_wino_preset_is_wino_step_by_step_over_the_grid": (),
    "tests/test_cache.py::test_the_cache_changes_what_a_stale_window_sees": (),
    # 1,920 decodes
    "tests/test_app_serve.py::test_the_widgets_largest_sweep_runs_through_the_shared_engine": ("long",),
    "tests/test_app_main.py::test_app_py_help_is_help_not_a_server": (),  # a fresh process imports torch
    # its own app.py
    "tests/test_app_serve.py::test_a_crowd_of_silent_sockets_at_the_descriptor_limit_stops_nothing": ("long",),
    "tests/test_guards.py::test_sessions_expire_and_are_capped_by_gradio_itself": (),  # a served demo
    "tests/test_guards.py::test_silent_and_slow_connections_are_bounded": (),
    "tests/test_guards.py::test_install_bounds_a_launched_demo": (),
    # Issue 39: the fork's floor over every kind of decode (two kinds stay fast); a 64-step world-model export.
    "tests/test_fork.py::test_a_fork_with_nothing_changed_is_the_trace_itself_on_every_kind_of_decode": (),
    "tests/test_animation.py::test_a_64_step_world_model_trace_is_under_2_mb_as_gif": (),
    "tests/test_animation.py::test_a_browser_plays_the_svg_frame_by_frame": ("browser",),
    "tests/test_guards.py::test_a_uvicorn_without_the_hooks_is_refused_by_name": (),
    "tests/test_api.py::test_a_client_that_leaves_cancels_its_decode": (),  # a gradio_client process, killed
    # transformers
    "tests/test_budget.py::test_the_shipped_renoising_model_refuses_a_billion_tokens_through_load_model": (),
    # The notebook widget: two widgets on a notebook-like page; a fresh process imports the package.
    "tests/test_notebook.py::test_two_widgets_draw_their_own_traces_offline": ("browser",),
    "tests/test_notebook.py::test_scrubbing_one_widget_leaves_the_other_where_it_was": ("browser",),
    "tests/test_notebook.py::test_hover_shows_the_inspector_of_the_token_under_the_pointer": ("browser",),
    "tests/test_notebook.py::test_a_click_on_a_heatmap_cell_selects_its_step_and_position_in_that_widget_only":
        ("browser",),
    "tests/test_notebook.py::test_import_dllm_viz_needs_no_anywidget_nor_plotly": (),
    "tests/test_notebook.py::test_a_moved_and_a_renoising_trace_play_in_widgets_frame_by_frame": ("browser",),
    "tests/test_scenes.py::test_each_scene_takes_back_or_rewrites": (),  # world decodes (WINO's verify canvases)
}


def marks_for(nodeid: str) -> set[str]:
    """The marks `MARKS` gives the test `nodeid` ("tests/test_x.py::test_name[param]")."""
    path, _, name = nodeid.partition("::")
    keys = {path, f"{path}::{name.split('[')[0]}", *(str(p) for p in Path(path).parents if str(p) != ".")}
    found = {mark for key in keys if key in MARKS for mark in (*MARKS[key], "slow")}
    return found | ({"slow"} if found & {"browser", "sglang", "long"} else set())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:  # node ids are relative to the repository root (pyproject.toml's [tool.pytest])
        for mark in sorted(marks_for(item.nodeid)):
            item.add_marker(getattr(pytest.mark, mark))


# ----- the shared server ---------------------------------------------------------------------------
@dataclass
class ServedApp:
    """`python app.py` serving the embedded model: its URL, and what it wrote and connected to."""

    url: str
    proc: subprocess.Popen
    output: Path  # the server's stdout and stderr
    net_log: Path  # non-loopback connections seen by tests/netguard.py's audit hook
    clients: list = field(default_factory=list)  # closed with the server: a client's heartbeat thread
    # otherwise keeps reconnecting to the port once the server is gone (a later test's socket guard sees it)

    def client(self):
        from gradio_client import Client

        self.clients.append(Client(self.url, verbose=False))
        return self.clients[-1]

    def printed(self) -> str:
        return self.output.read_text(errors="replace")


@pytest.fixture(scope="session")
def served_app(tmp_path_factory: pytest.TempPathFactory):
    """One `python app.py` for every test that needs the real server (test_api, test_offline).

    Started as a user starts it (none of the offline switches preset: tests/netguard.py), on a
    free port, under the network audit hook, so the offline test reads the same process the API
    test talks to. The README's quick-start test starts its own: it checks the documented command
    on the documented port.
    """
    from tests.netguard import guarded_env
    from tests.ui_model import free_port

    tmp = tmp_path_factory.mktemp("served_app")
    env, net_log = guarded_env(tmp)
    port = free_port()
    env["GRADIO_SERVER_PORT"] = str(port)
    output = tmp / "server.log"
    with output.open("w") as out:
        proc = subprocess.Popen([sys.executable, str(tmp / "guard.py"), "app.py"], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, text=True)
    app = ServedApp(f"http://127.0.0.1:{port}/", proc, output, net_log)
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                pytest.fail(f"app.py exited ({proc.returncode}):\n{app.printed()[-4000:]}")
            try:
                app.client().close()
                break
            except Exception:
                if time.monotonic() > deadline:
                    pytest.fail(f"app.py did not answer within 300 s:\n{app.printed()[-4000:]}")
                time.sleep(0.5)  # polling for the server to come up, not timing anything
        yield app
    finally:
        for client in app.clients:
            client.close()
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@contextmanager
def _environment_lock(exclusive: bool):
    """The README's quick start reinstalls this checkout into the running environment (`-e .`); a Python
    process started outside the checkout meanwhile, by another process of `pytest -n 2`, could then find
    no `dllm_viz`. The installer holds this lock alone, the tests whose processes import it together
    (one lock file per environment, so two checkouts sharing one environment wait for each other too)."""
    digest = hashlib.sha1(sys.prefix.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"dllm-viz-environment-{digest}.lock"
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture
def installs_the_package():
    """For a test that reinstalls the package into the running environment (the quick start)."""
    with _environment_lock(exclusive=True):
        yield


@pytest.fixture
def imports_the_installed_package():
    """For a test whose Python process imports the installed package from outside the checkout."""
    with _environment_lock(exclusive=False):
        yield
