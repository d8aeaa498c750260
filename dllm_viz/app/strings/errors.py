"""English / 中文 strings for the playground: user errors (`errors.localize` renders the checks'
English messages with these). Part of the one table `i18n.STRINGS`.
"""
from __future__ import annotations

STRINGS: dict[str, tuple[str, str]] = {
    "err_invalid": ("{name}={value} is invalid: expected {range}", "{name}={value} 无效：应为{range}"),
    "err_int_in": ("an integer in [{lo}, {hi}]", " [{lo}, {hi}] 内的整数"),
    "err_number_in": ("a finite number in {l}{lo}, {hi}]", "区间 {l}{lo}, {hi}] 内的有限数"),
    "err_temperature_in": ("0 (argmax) or a number in [{lo}, {hi}]", " 0（argmax）或 [{lo}, {hi}] 内的数"),
    "err_one_of": ("one of {names}", "以下之一：{names}"),
    "err_divisor": ("a divisor of gen_length={g}", " gen_length={g} 的约数"),
    "err_multiple": ("a multiple of the number of blocks ({n})", "块数（{n}）的倍数"),
    "err_stages": ("None or three temperatures (early, middle, late)", " None 或三个温度（前期、中期、后期）"),
    "err_bool": ("True or False", " True 或 False"),
    "err_no_field": ("no such field; known fields: {names}", "已知字段之一（没有这个字段）：{names}"),
    "err_json_object": ("a JSON object of DecodeConfig fields", "由 DecodeConfig 字段组成的 JSON 对象"),
    "err_same_length": ("A's gen_length={g}", "与 A 相同的 gen_length={g}"),
    "err_at_least_one": ("at least one value", "至少一个值"),
    "err_needs_all": ("confidence_from={src} needs sample_scope='all'", "confidence_from={src} 需要 sample_scope='all'（只有抽过词的位置才有“抽中词的置信度”）"),
    "err_too_big": ("trace file has {n} bytes: this viewer reads at most {m}", "轨迹文件有 {n} 字节：最多只能读取 {m} 字节"),
    "err_not_json": ("trace JSON does not parse", "轨迹文件不是有效的 JSON"),
    "err_format": ("trace format={v} is not this viewer's", "这不是 dllm-viz 的轨迹文件（format={v}）"),
    "err_version": ("trace version={v}: this dllm-viz reads version {n}", "轨迹版本 {v}：本程序只能读取版本 {n}"),
    "err_nothing": ("nothing was uploaded", "没有上传任何文件"),
    "err_side_a": ("config A: {e}", "配置 A：{e}"),
    "err_side_b": ("config B: {e}", "配置 B：{e}"),
    "err_trace_config": ("trace config: {e}", "轨迹中的配置：{e}"),
    "err_trace_file": ("trace file: {e}", "轨迹文件：{e}"),
    "err_busy": ("server busy: {e}", "服务器繁忙：{e}"),
    "err_other": ("{e}", "出错了：{e}"),
}
