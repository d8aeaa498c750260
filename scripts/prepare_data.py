"""Prepare the embedded model's corpus from Debian's ``r-cran-janeaustenr`` package.

The package (MIT; Jane Austen's six completed novels, public domain) stores the texts as R
lazy-load data: ``data/Rdata.rdx`` is an index and ``data/Rdata.rdb`` a concatenation of
zlib-compressed R serialisations (XDR format). Both are read here in pure Python, without R.

Usage (no root needed; ``apt-get download`` only fetches the .deb)::

    cd /work/scratch-model && apt-get download r-cran-janeaustenr
    python scripts/prepare_data.py --deb r-cran-janeaustenr_1.0.0-1_all.deb --out /work/scratch-model/data

Writes ``train.txt``, ``heldout.txt`` (a contiguous passage from each novel, never trained on)
and ``provenance.json``. Only the trained weights are committed, never this corpus.

The larger corpus (issue 12) adds the public-domain prose of other Debian packages
(``scripts/corpus_sources.py`` lists them) after the Austen training text; the Austen held-out
split stays byte for byte what it was, and ``manifest.json`` records each source's package,
version, sha256, licence and size in characters::

    cd DEBS && apt-get download r-cran-janeaustenr r-cran-tokenizers r-cran-tidytext r-cran-wordcloud \
        dict-devil sword-text-web sword-text-kjv sword-comm-mhcc sword-comm-tdavid sword-comm-scofield
    python scripts/prepare_data.py --deb DEBS/r-cran-janeaustenr_1.0.0-1_all.deb --out DATA --sources all

``judge`` sources (Great Expectations) go to ``judge.txt``, never to ``train.txt``: the word
n-gram fluency judge of ``bench/model_quality.py`` is built from them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import tempfile
from pathlib import Path

from corpus_sources import SOURCES
from rdata import RAttr, book_to_text, read_lazyload

BOOKS = ("sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion")
# sha256 of the held-out text every figure in dllm_viz/assets/embedded/MODEL_CARD.md was measured on
# (r-cran-janeaustenr 1.0.0-1, --heldout-fraction 0.03): a run that would change it stops.
HELDOUT_SHA256 = "64f2cf5be61d9fe96c45a2dd29055a7bd6b88fefe8e8c5027d999f1fad5af0fa"


def split_heldout(text: str, fraction: float) -> tuple[str, str]:
    """Hold out one contiguous run of whole paragraphs at about 60% of the book."""
    if not 0.0 < fraction < 0.5:
        raise ValueError(f"heldout_fraction={fraction} must be in (0, 0.5)")
    paras = text.split("\n")
    total = sum(len(p) + 1 for p in paras)
    start_char, want = int(0.6 * total), int(fraction * total)
    pos, lo, hi = 0, None, None
    for i, p in enumerate(paras):
        if lo is None and pos >= start_char:
            lo = i
        if lo is not None and pos - start_char >= want:
            hi = i
            break
        pos += len(p) + 1
    hi = hi if hi is not None else len(paras)
    train = "\n".join(paras[:lo] + paras[hi:])
    return train, "\n".join(paras[lo:hi])


def split_austen(data: dict[str, object], fraction: float) -> tuple[str, str, dict[str, dict[str, int]]]:
    """Austen's training and held-out text from the package's lazy-load data (the shipped model's split)."""
    train_parts, heldout_parts, stats = [], [], {}
    for name in BOOKS:
        value = data[name]
        lines = value.value if isinstance(value, RAttr) else value
        train, heldout = split_heldout(book_to_text(lines), fraction)
        train_parts.append(train)
        heldout_parts.append(heldout)
        stats[name] = {"train_chars": len(train), "heldout_chars": len(heldout)}
    return "\n".join(train_parts) + "\n", "\n".join(heldout_parts) + "\n", stats


def assemble(austen_train: str, extras: list[tuple[str, str]], *, austen_repeat: int = 1) -> dict[str, str]:
    """``{"train": ..., "judge": ...}`` from Austen's training text and ``(role, text)`` extras.

    The Austen text comes first and unchanged, so ``train.txt`` starts with today's training text
    and the held-out split (written separately) is untouched by whatever is added.
    ``austen_repeat``: Austen's text that many times, a sampling weight (windows are drawn uniformly
    from the stream), so that the extras add grammar without drowning the held-out author.
    """
    if not isinstance(austen_repeat, int) or austen_repeat < 1:
        raise ValueError(f"austen_repeat={austen_repeat!r}: expected an integer >= 1")
    out = {"train": austen_train * austen_repeat, "judge": ""}
    for role, text in extras:
        if role not in out:
            raise ValueError(f"role={role!r} must be one of {sorted(out)}")
        out[role] += text.rstrip("\n") + "\n"
    return out


def leaked_snippets(heldout: str, other: str, *, width: int = 80, count: int = 200) -> int:
    """How many of ``count`` evenly spaced ``width``-character pieces of ``heldout`` occur in ``other``."""
    step = max(1, (len(heldout) - width) // count)
    pieces = [heldout[i : i + width] for i in range(0, max(1, len(heldout) - width), step)][:count]
    return sum(piece in other for piece in pieces if len(piece) == width)


def deb_info(deb: Path) -> dict[str, str]:
    """Package, version and sha256 of a ``.deb``."""
    fields = subprocess.run(["dpkg-deb", "-f", str(deb), "Package", "Version"], check=True, capture_output=True,
                            text=True).stdout
    info = dict(line.split(": ", 1) for line in fields.strip().splitlines())
    return {"package": info["Package"], "version": info["Version"], "deb": deb.name,
            "deb_sha256": hashlib.sha256(deb.read_bytes()).hexdigest()}


def read_sources(names: list[str], debs: Path, tmp: Path) -> list[tuple[dict, list[tuple[str, str]]]]:
    """Read each named source from its package's ``.deb`` in ``debs`` (unpacked once under ``tmp``)."""
    out, unpacked = [], {}
    for name in names:
        if name not in SOURCES:
            raise ValueError(f"sources: {name!r} must be one of {sorted(SOURCES)} or 'all'")
        source = SOURCES[name]
        found = sorted(debs.glob(f"{source.package}_*.deb"))
        if not found:
            raise FileNotFoundError(f"{debs}: no {source.package}_*.deb "
                                    f"(cd {debs} && apt-get download {source.package})")
        if source.package not in unpacked:
            root = tmp / source.package
            subprocess.run(["dpkg-deb", "-x", str(found[-1]), str(root)], check=True)
            unpacked[source.package] = root
        texts = source.read(unpacked[source.package])
        entry = {"source": name, **deb_info(found[-1]), "licence": source.licence, "register": source.register,
                 "role": source.role, "titles": {title: len(text) for title, text in texts},
                 "chars": sum(len(text) + 1 for _, text in texts)}
        out.append((entry, texts))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deb", type=Path, required=True, help="r-cran-janeaustenr .deb file")
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--heldout-fraction", type=float, default=0.03)
    parser.add_argument("--sources", nargs="*", default=[],
                        help="extra sources from scripts/corpus_sources.py (or 'all'); none: Austen only, as shipped")
    parser.add_argument("--debs", type=Path, default=None,
                        help="folder with the sources' .deb files (default: --deb's)")
    parser.add_argument("--austen-repeat", type=int, default=1,
                        help="Austen's training text this many times in train.txt "
                             "(a sampling weight; held-out unchanged)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["dpkg-deb", "-x", str(args.deb), tmp], check=True)
        root = Path(tmp) / "usr/lib/R/site-library/janeaustenr"
        data = read_lazyload(root / "data/Rdata.rdx", root / "data/Rdata.rdb")
        description = (root / "DESCRIPTION").read_text()
    train_text, heldout_text, stats = split_austen(data, args.heldout_fraction)
    heldout_sha = hashlib.sha256(heldout_text.encode()).hexdigest()
    if args.heldout_fraction == 0.03 and "Version: 1.0.0" in description and heldout_sha != HELDOUT_SHA256:
        raise ValueError(f"held-out split changed (sha256 {heldout_sha}, expected {HELDOUT_SHA256})")
    (args.out / "train.txt").write_text(train_text)
    (args.out / "heldout.txt").write_text(heldout_text)
    version = re.search(r"^Version: (.*)$", description, re.M).group(1)
    provenance = {
        "package": "Debian r-cran-janeaustenr",
        "deb": args.deb.name,
        "deb_sha256": hashlib.sha256(args.deb.read_bytes()).hexdigest(),
        "upstream_version": version,
        "licence": "MIT (package); the novels themselves are public domain",
        "files": ["usr/lib/R/site-library/janeaustenr/data/Rdata.rdx",
                  "usr/lib/R/site-library/janeaustenr/data/Rdata.rdb"],
        "objects": list(BOOKS),
        "heldout": f"one contiguous passage of ~{args.heldout_fraction:.0%} starting at 60% of each novel",
        "books": stats,
        "train_chars": len(train_text),
        "heldout_chars": len(heldout_text),
    }
    (args.out / "provenance.json").write_text(json.dumps(provenance, indent=2))
    if not args.sources:
        print(json.dumps({k: provenance[k] for k in ("train_chars", "heldout_chars")}))
        return
    names = list(SOURCES) if args.sources == ["all"] else args.sources
    with tempfile.TemporaryDirectory() as tmp:
        read = read_sources(names, args.debs or args.deb.parent, Path(tmp))
    extras = [(entry["role"], "\n".join(text for _, text in texts)) for entry, texts in read]
    corpus = assemble(train_text, extras, austen_repeat=args.austen_repeat)
    for entry, texts in read:
        entry["heldout_snippets_found"] = leaked_snippets(heldout_text, "\n".join(t for _, t in texts))
        if entry["heldout_snippets_found"]:
            raise ValueError(f"source {entry['source']!r} contains Austen held-out text: drop it")
    (args.out / "train.txt").write_text(corpus["train"])
    (args.out / "judge.txt").write_text(corpus["judge"])
    austen = {"source": "janeaustenr", **deb_info(args.deb), "licence": provenance["licence"], "register": "fiction",
              "role": "train+heldout", "titles": stats, "chars": provenance["train_chars"]}
    manifest = {
        "sources": [austen] + [entry for entry, _ in read],
        "train_chars": len(corpus["train"]),
        "austen_train_chars": len(train_text),
        "heldout_chars": len(heldout_text),
        "heldout_sha256": heldout_sha,
        "judge_chars": len(corpus["judge"]),
        "austen_repeat": args.austen_repeat,
        "train_vs_austen": round(len(corpus["train"]) / len(train_text), 2),
    }
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    print(json.dumps({k: v for k, v in manifest.items() if k != "sources"}))


if __name__ == "__main__":
    main()
