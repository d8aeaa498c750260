"""A Gradio page driven over raw HTTP, as an attacker (or a careless script) does: no browser, no
heartbeat, so the server never learns that the "page" closed. Used by tests and bench/reliability_bench.py.
"""
from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx


def event_index(url: str, client: httpx.Client, component: str, event: str, *, value: Any = None) -> int:
    """The fn_index of the first `event` ("upload", "click", ...) listened to on a `component` type
    (whose `value`, a button's label say, is `value` when given)."""
    config = client.get(url + "config").json()
    comps = {c["id"]: c for c in config["components"]}
    for i, dep in enumerate(config["dependencies"]):
        for target, ev in dep.get("targets", []):
            c = comps.get(target, {})
            if (c.get("type") == component and ev == event
                    and (value is None or c.get("props", {}).get("value") == value)):
                return i
    raise LookupError(f"no {event} event on a {component}" + (f" showing {value!r}" if value is not None else ""))


class RawSession:
    """One Gradio session (a `session_hash` of our own) that calls events by index."""

    def __init__(self, url: str, client: httpx.Client) -> None:
        self.url, self.client, self.hash = url, client, uuid.uuid4().hex[:11]

    def upload(self, path: str | Path, name: str = "trace.json") -> dict[str, Any]:
        """POST a file to Gradio's upload route; the FileData an event takes."""
        with open(path, "rb") as f:
            r = self.client.post(self.url + "gradio_api/upload", files={"files": (name, f, "application/json")})
        r.raise_for_status()
        return {"path": r.json()[0], "meta": {"_type": "gradio.FileData"}, "orig_name": name}

    def call(self, fn_index: int, data: list[Any]) -> dict[str, Any]:
        """Run event `fn_index` with `data` in this session; the final message of its event stream."""
        body = {"data": data, "fn_index": fn_index, "session_hash": self.hash, "event_data": None, "trigger_id": None}
        self.client.post(self.url + "gradio_api/queue/join", json=body).raise_for_status()
        with self.client.stream("GET", self.url + f"gradio_api/queue/data?session_hash={self.hash}") as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if message.get("msg") == "process_completed":
                        return message
        raise RuntimeError("the event stream ended without a result")
