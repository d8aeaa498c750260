"""app/strings/: one package per language with every key of English, every key used, and the 中文 page has no
stray English."""
from __future__ import annotations

import ast
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dllm_viz import DecodeConfig, decode
import dllm_viz.app.strings as strings
from dllm_viz.app.strings import LANGS, STRINGS, t
from dllm_viz.core.config import REVISIONS, SCHEDULES
from tests.ui_model import make_text_model

APP = Path(strings.__file__).parents[1]
# Keys built at run time from a prefix and a registry name: (prefix, where the names come from).
DYNAMIC = ("preset_", "m_", "choice_", "col_", "ex_", "rule_", "rv_score_", "rv_rule_", "info_", "rt_regime_",
           "diff_kind_", "mv_born_", "it_kind_", "it_op_", "rn_state_", "rn_tip_", "rs_", "sb_", "sweep_mean_",
           "scene_", "rt_shipped_", "canvas_box_", "canvas_note_", "subtitle_", "canvas_cmp_", "sweep_canvas_")
# English words allowed on the 中文 page: code identifiers (field and registry names), units and
# symbols the article itself uses, and the model's own text.
CODE_WORDS = {
    "top_k", "top_p", "min_k", "max_prob", "margin", "entropy", "random", "topk_decay", "fixed_steps", "threshold",
    "adaptive",
    "raw", "tempered", "sampled", "selected", "all", "per_request", "shared", "confidence_from", "sample_scope",
    "rng", "gen_length", "block_length", "temperature_stages", "softmax", "NFE", "JSON", "MASK",
    "SGLang", "README", "dllm", "viz", "DecodeConfig", "English", "Abc", "log", "prob", "decay",
    "steps", "temperature", "seed", "sample", "at", "model", "tiny", "chars", "api", "API", "Gradio",
    "tok", "L", "T", "k", "p", "A", "B", "x", "Top", "top", "max", "min", "AUP", "LLM",
    "ms", "vs",
    "LLaDA", "Dream", "Fast", "dLLM", "linear_time", "sampled_raw", "filtered",  # the shipped samplers' names
    "True", "False", "None", "format", "config_json",  # Python values, field names
    "generate",  # the API's endpoint, /generate
    "early_stop", "early_stop_threshold", "block_schedule", "vocab_top_k", "confidence", "max_prob", "restart",
    "continue", "temperature_stages", "early", "middle", "late", "schedule",  # DecodeConfig's field names and values
    "RCR", "ReMDM", "WINO", "JointThreshold", "LowConfidence", "MDPO", "MaskGIT",  # the revision rules' names
    "JointThresholdInDel", "DELETE", "SPLIT",  # the insert/delete rule and its edit tokens (as MASK)
    "eta", "sigma", "sigma_max", "penalty_lambda", "logit", "Wilson",  # their knobs' symbols, the interval
    "DiffusionGemma", "Gemma", "Renoise", "transformers", "world", "renoise", "AUP",  # the renoising models, AUP
} | set(SCHEDULES) | set(REVISIONS) | set(DecodeConfig.field_names())  # every rule plug-in's name, every knob's


def test_every_key_exists_in_every_language_and_says_something():
    assert LANGS == ("en", "zh") and strings.LANG_CHOICES == (("English", "en"), ("中文", "zh"))
    for code, module in strings.LANGUAGES.items():
        assert module.STRINGS.keys() == strings.LANGUAGES["en"].STRINGS.keys(), code
        assert [k for k, text in module.STRINGS.items() if not text.strip()] == [], code
    assert all(len(values) == len(LANGS) for values in STRINGS.values())


def test_a_language_without_a_key_or_with_a_stray_one_is_refused():
    tables = {code: dict(module.STRINGS) for code, module in strings.LANGUAGES.items()}
    strings.check_tables(tables)
    del tables["zh"]["run"]
    with pytest.raises(ImportError, match=r"strings.zh: keys missing \['run'\]"):
        strings.check_tables(tables)
    tables["zh"].update(run="运行", rnu="运行")
    with pytest.raises(ImportError, match=r"keys not in strings.en \['rnu'\]"):
        strings.check_tables(tables)


def test_no_key_is_written_twice_in_a_language():
    # A dict literal keeps the last of two equal keys silently; no topic file of a language may have any (two
    # topics with one key are refused at import: the next test).
    for code, module in strings.LANGUAGES.items():
        topics = sorted(Path(module.__file__).parent.glob("*.py"))
        assert [p.name for p in topics] == ["__init__.py", "page.py", "rules.py"], code
        for topic in topics:
            tree = ast.parse(topic.read_text(encoding="utf-8"))
            keys = [k.value for node in ast.walk(tree) if isinstance(node, ast.Dict) for k in node.keys]
            assert sorted({k for k in keys if keys.count(k) > 1}) == [], (code, topic.name)


def test_a_key_in_two_topics_of_a_language_is_refused():
    from types import SimpleNamespace

    page, rules = (SimpleNamespace(__name__=f"strings.xx.{name}", STRINGS=table)
                   for name, table in (("page", {"run": "Run", "stop": "Stop"}), ("rules", {"stop": "Halt"})))
    with pytest.raises(ImportError, match=r"strings.xx.rules: keys already in another topic .*\['stop'\]"):
        strings.gather(page, rules)
    assert strings.gather(page) == {"run": "Run", "stop": "Stop"}
    for code, module in strings.LANGUAGES.items():  # each language is its topics, gathered in order
        assert list(module.STRINGS) == [*module.page.STRINGS, *module.rules.STRINGS], code


def test_a_third_language_is_one_new_folder(tmp_path, monkeypatch):
    copy = tmp_path / "strings_copy"
    shutil.copytree(APP / "strings", copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "fr").mkdir()
    (copy / "fr" / "__init__.py").write_text('NAME = "Français"\nfrom ..en import STRINGS\n'
                                             'STRINGS = {**STRINGS, "run": "Lancer"}\n', encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "strings_copy", raising=False)
    import strings_copy

    assert strings_copy.LANGS == ("en", "fr", "zh") and ("Français", "fr") in strings_copy.LANG_CHOICES
    assert strings_copy.t("run", "fr") == "Lancer" and strings_copy.t("run", "zh") == t("run", "zh")


def test_every_key_is_used_somewhere():
    # The page's modules, the studies' tables, whose rows name the page's keys (app/views/lessons.py), and
    # the page's renderer (app/web/*.js: `t.key`, and the views/web.py prefixes it builds keys from).
    import re

    from dllm_viz.app.views import web

    files = [*APP.rglob("*.py"), *(APP.parent / "studies").rglob("*.py")]
    source = "".join(p.read_text(encoding="utf-8") for p in files if "strings" not in p.relative_to(APP.parent).parts)
    scripts = web.PAGE_JS
    knobs = set(DecodeConfig.field_names())  # a rule plug-in's knob: its widget's label (layout/revision.knob_widget)
    in_js = lambda k: re.search(rf"\bt\.{k}\b|[\"'`]{k}[\"'`]", scripts) is not None  # noqa: E731
    unused = [k for k in STRINGS if f'"{k}"' not in source and f"'{k}'" not in source and not k.startswith(DYNAMIC)
              and k not in knobs and not in_js(k)]
    assert unused == []


def test_the_about_text_names_every_schedule():
    for lang in LANGS:
        about = t("about_md", lang)
        assert [s for s in SCHEDULES if f"`{s}`" not in about] == [], lang


def test_a_bad_language_names_the_parameter():
    with pytest.raises(ValueError, match="lang='fr'"):
        t("run", "fr")


# Terms the 中文 page may keep in English, each time with a gloss in Chinese beside it (issue 41): a
# fullwidth bracket with Chinese after it ("Shift（上档键）"), or the term in brackets after Chinese
# ("最可能的词（argmax）") or inside Chinese brackets ("（取最可能的词，argmax）").
GLOSSED_TERMS = ("Shift", "Enter", "argmax", "logits", "distinct", "gram")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_TERM = re.compile(r"(?<![A-Za-z_])(?:\d+-)?(" + "|".join(GLOSSED_TERMS) + r")(?:-\d+)?(?![A-Za-z_])")


def _glossed(text: str, m: re.Match) -> bool:
    before, after = text[:m.start()], text[m.end():]
    if after.startswith("（") and "）" in after and _CJK.search(after[:after.index("）")]):
        return True  # "Shift（上档键）"
    opened = before.rfind("（")
    if opened < before.rfind("）") or opened < 0 or "）" not in after:
        return False
    group = before[opened:] + after[:after.index("）")]
    return bool(_CJK.search(group) or _CJK.search(before[opened - 1:opened]))  # "（取…，argmax）", "词（argmax）"


def unglossed(text: str) -> list[str]:
    """The glossed terms in `text` (code spans aside) that stand without a Chinese gloss beside them."""
    text = re.sub(r"`[^`]*`", " ", text)
    return [m.group(0) for m in _TERM.finditer(text) if not _glossed(text, m)]


def english_words(text: str) -> set[str]:
    """English words of a 中文 text that are neither code words nor glossed terms."""
    text = re.sub(r"`[^`]*`", " ", text)  # code spans
    text = _TERM.sub(lambda m: " " if _glossed(m.string, m) else m.group(0), text)
    text = re.sub(r"<[^>]+>", " ", text)  # tags
    text = re.sub(r"\{[^}]*\}", " ", text)  # placeholders
    return {w for w in re.findall(r"[A-Za-z][A-Za-z_]*", text) if w not in CODE_WORDS and len(w) > 1}


def test_the_chinese_strings_have_no_untranslated_english():
    leaks = {key: english_words(values[1]) for key, values in STRINGS.items()}
    assert {k: v for k, v in leaks.items() if v} == {}


def _chinese_prose(node: object) -> Iterator[str]:
    """Every 中文 text of a parsed lessons.yaml: the values under a `zh` key."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "zh" and isinstance(value, str):
                yield value
            else:
                yield from _chinese_prose(value)
    elif isinstance(node, list):
        for value in node:
            yield from _chinese_prose(value)


# Names the lessons' 中文 prose keeps as they are: a model family, a benchmark, its authors and venue, a rule's name.
PROPER_NAMES = {"MDLM", "ParallelBench", "Kang", "ICLR", "KL", "InDel"}


def test_the_chinese_lesson_prose_has_no_untranslated_english():
    """The Compare tab's lesson texts and the studies under them (dllm_viz/assets/lessons.yaml) in 中文: no English
    word outside code spans and names, and each kept term (logits, argmax, 3-gram...) glossed in Chinese."""
    import yaml

    texts = list(_chinese_prose(yaml.safe_load((Path(strings.__file__).parents[2] / "assets" / "lessons.yaml")
                                               .read_text(encoding="utf-8"))))
    assert len(texts) > 20  # every lesson's title, what to look for and what was measured, and the studies
    assert {w for text in texts for w in english_words(text)} - PROPER_NAMES == set()
    assert [term for text in texts for term in unglossed(text)] == []


def test_the_walkthrough_speaks_of_the_canvas_on_show():
    """The tour said "the masks being filled in", "the unmasking order" on a renoising trace, whose canvas is never
    masked: each canvas kind has its steps (views/web.py TOUR, picked by the trace on show in page.js), and a renoising
    canvas's speak of noise, acceptance by the entropy bound and renoising, in every language."""
    from dllm_viz.app.views import web
    from dllm_viz.core import rules

    assert set(web.TOUR) == {"masked", *rules.CANVAS_RULES} and web.options()["tour"]["renoise"]
    masked_words = {"en": re.compile(r"\bmasks\b|unmask|still masked|confirm|schedule|article", re.I),
                    "zh": re.compile("掩码|确认|调度|文章")}
    for canvas, steps in web.TOUR.items():
        for _, key in steps:
            assert key.startswith("tour_") and key in web.strings("en"), key  # the renderer is given its text
    for lang, words in masked_words.items():
        renoise = [t(key, lang) for _, key in web.TOUR["renoise"]]
        assert [text for text in renoise if words.search(text)] == []
        assert words.search(" ".join(t(key, lang) for _, key in web.TOUR["masked"]))  # the words the test looks for
        said = " ".join(renoise)
        assert all(word in said for word in {"en": ("renois", "entropy bound", "accept", "noise"),
                                             "zh": ("重噪", "熵上界", "接受", "噪声")}[lang])


def test_the_chinese_views_have_no_untranslated_english():
    # Render every view of the playground, the lessons and the sweep in 中文 and read their text.
    from dllm_viz.app.handlers.adapters import config_to_settings
    from dllm_viz.app.handlers.playground import Playground

    model = make_text_model()

    def run(prompts, configs, *, on_step=None, record_candidates=5):
        return decode(model, prompts, configs, on_step=on_step, record_candidates=record_candidates)

    pg = Playground(run)
    shown = pg.play.decode(prompt="", lang="zh", **config_to_settings(DecodeConfig.preset("balanced", 16)))
    texts = [shown.facts, shown.banner, shown.preset_badge]
    for key in ("polluted", "rng", "threshold"):
        lesson = pg.compare.lesson(key, prompt="", seed=0, gen_length=16, lang="zh")
        texts += [lesson.lesson_text, lesson.compare.cmp_summary, lesson.compare.cmp_facts_a]
    sweep = pg.sweep.run(sweep_temps=[1.0], sweep_divisors=["L/4"], sweep_decays=[0.9], sweep_seeds=1,
                         sweep_prompts="a", sweep_gen_length=8, lang="zh")
    texts += [sweep.sweep_summary, *sweep.sweep_table["headers"], sweep.sweep_nfe.layout.title.text]
    import html

    from dllm_viz.app.views import web

    texts += list(web.strings("zh").values())  # what the page writes of a trace: canvas, inspector, figures
    leaks = {w for s in texts for w in english_words(html.unescape(s))}
    assert leaks == set()


# User errors the page can meet, each with what the visitor typed (their own words are not ours
# to translate): Compare configs, uploaded files, the sweep grid.
COMPARE_ERRORS = (
    ('{"temperature": "hot"}', "hot"), ('{"top_k": 0}', ""), ('{"decay": 2}', ""), ('{"schedule": "fast"}', "fast"),
    ('{"block_length": 7}', ""), ('{"schedule": "fixed_steps", "steps": 3, "block_length": 8}', ""),
    ('{"temperature_stages": [1]}', ""), ('{"nope": 1}', "nope"), ("{not json", "not json"), ("[1]", ""),
    ('{"confidence_from": "sampled"}', ""), ('{"gen_length": 8}', ""), ('{"early_stop": "yes"}', "yes"),
    ('{"seed": -1}', ""), ('{"temperature": 0.00001}', ""), ('{"rng": "global"}', "global"),
)


def test_the_chinese_error_messages_have_no_untranslated_english(tmp_path):
    from dllm_viz.app.handlers.errors import localize
    from dllm_viz.app.handlers.playground import Playground

    model = make_text_model()
    pg = Playground(lambda prompts, configs, **kw: decode(model, prompts, configs), export_dir=tmp_path)
    messages: list[tuple[str, str]] = []

    def caught(fn, typed: str = "", **kwargs) -> None:
        with pytest.raises(ValueError) as err:
            fn(**kwargs)
        messages.append((localize(str(err.value), "zh"), typed))

    for side in ("a", "b"):
        for config, typed in COMPARE_ERRORS:
            configs = {"cmp_a": "{}", "cmp_b": "{}", f"cmp_{side}": config}
            caught(pg.compare.run, typed, prompt="x", seed=0, gen_length=16, neighbours=0, lang="zh", **configs)
    files = {"not.json": ("{oops", ""), "format.json": ('{"format": "other"}', "other"),
             "version.json": ('{"format": "dllm-viz-trace", "version": 99}', "")}
    for name, (text, typed) in files.items():
        (tmp_path / name).write_text(text)
        caught(pg.play.upload, typed, upload=str(tmp_path / name), lang="zh")
    caught(pg.play.upload, upload=None, lang="zh")
    caught(pg.sweep.run, sweep_temps=[], sweep_divisors=["L/4"], sweep_decays=[0.9], sweep_seeds=1, sweep_prompts="a",
           sweep_gen_length=8, lang="zh")
    assert len(messages) == 2 * len(COMPARE_ERRORS) + len(files) + 2
    fields = set(DecodeConfig.field_names()) | set(SCHEDULES)  # "no such field" lists them: code identifiers
    leaks = {m: english_words(m.replace(typed, " ") if typed else m) - fields for m, typed in messages}
    assert {m: words for m, words in leaks.items() if words} == {}
    assert all(re.search(r"[\u4e00-\u9fff]", m) for m, _ in messages)  # each says something in 中文
