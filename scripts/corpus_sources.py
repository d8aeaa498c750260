"""English prose beyond Austen that Debian's packages ship, for a larger training corpus.

Each :class:`Source` names one Debian package, what in it is read, its licence as the package's
``copyright`` file states it, and a ``role``: ``train`` text may be trained on; ``judge`` text is
never trained on (``bench/model_quality.py`` builds its word n-gram fluency judge from it, so
that the judge cannot reward copying the training text). ``scripts/prepare_data.py --sources``
picks sources from :data:`SOURCES`; every reader here is pure Python (no R, no SWORD library).

What the registries hold (searched December 2026; PyPI's Gutenberg packages only download texts
at run time, so none ships prose): Debian bookworm's R data packages (Austen, Melville, Dickens,
Verne, Wells, two State of the Union addresses), Bierce's Devil's Dictionary (dictd), and the
CrossWire SWORD modules: two public-domain Bible translations and three public-domain
commentaries (Henry 1706, Spurgeon 1869-1885, Scofield 1917). Everything else English in prose
form is either a dictionary, a word list, software documentation, or not public domain.
"""

from __future__ import annotations

import gzip
import html
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rdata import RAttr, book_to_text, read_lazyload, read_rda

R_LIB = Path("usr/lib/R/site-library")
SWORD = Path("usr/share/sword/modules")

# Typographic punctuation mapped to the ASCII forms the Austen text uses (its tokenizer was
# trained on ASCII; "--" is Austen's dash). The pilcrow of the KJV marks paragraphs: dropped.
_ASCII = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2014": "--", "\u2013": "-",
                        "\u2026": "...", "\u00b6": "", "\u00a0": " ", "\ufeff": ""})


@dataclass(frozen=True)
class Source:
    """One text source inside one Debian package."""

    name: str  # key used on the command line and in the manifest
    package: str  # Debian binary package (``apt-get download PACKAGE``)
    licence: str  # as the package's debian/copyright (and the work's own notice) states it
    register: str  # fiction / essays / scripture / commentary / speeches: what the text reads like
    read: Callable[[Path], list[tuple[str, str]]]  # unpacked .deb root -> [(title, text)]
    role: str = "train"  # "train" or "judge" (never trained on)


def normalise(text: str) -> str:
    """ASCII punctuation, one paragraph per line, single spaces, no empty lines."""
    lines = (re.sub(r"[ \t]+", " ", line).strip() for line in text.translate(_ASCII).split("\n"))
    return "\n".join(line for line in lines if line)


def strip_gutenberg(text: str) -> str:
    """The body of a Project Gutenberg file: between the ``*** START OF`` and ``*** END OF`` lines.

    Text without those markers is returned unchanged (the R packages below mostly ship bodies).
    """
    start = re.search(r"^\*\*\* ?START OF (?:THIS|THE) PROJECT GUTENBERG.*$", text, re.M | re.I)
    end = re.search(r"^\*\*\* ?END OF (?:THIS|THE) PROJECT GUTENBERG.*$", text, re.M | re.I)
    if start is None or end is None or end.start() < start.end():
        return text
    return text[start.end() : end.start()]


# ---------------------------------------------------------------- R data packages (XDR)
def _columns(frame: object) -> dict[str, list]:
    """A data.frame (RAttr of column lists with a ``names`` attribute) as {name: column}."""
    if not isinstance(frame, RAttr):
        raise ValueError("expected an R data.frame with attributes")
    return dict(zip(frame.attributes["names"], frame.value))


def read_mobydick(root: Path) -> list[tuple[str, str]]:
    data = read_lazyload(root / R_LIB / "tokenizers/data/Rdata.rdx", root / R_LIB / "tokenizers/data/Rdata.rdb")
    value = data["mobydick"]
    (text,) = value.value if isinstance(value, RAttr) else value
    body = strip_gutenberg(text.replace("\r\n", "\n"))
    return [("Moby Dick (Melville, 1851)", normalise(book_to_text(body.split("\n"))))]


# Pride and Prejudice is in tidytext's books too: it is Austen's, whose held-out passage it
# contains, so it is never read from here.
TIDYTEXT_SKIP = ("Pride and Prejudice",)


def read_tidytext_books(root: Path, *, titles: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """Project Gutenberg books in ``tidytext/extdata/books.rda`` (one row per printed line)."""
    frame = read_rda(root / R_LIB / "tidytext/extdata/books.rda")["books"]
    cols = _columns(frame)
    lines_by_title: dict[str, list[str | None]] = {}
    for title, line in zip(cols["title"], cols["text"]):
        lines_by_title.setdefault(title, []).append(line)
    return [(title, normalise(book_to_text(lines))) for title, lines in lines_by_title.items()
            if title not in TIDYTEXT_SKIP and (titles is None or title in titles)]


def read_sotu(root: Path) -> list[tuple[str, str]]:
    """``wordcloud``'s SOTU: a tm corpus of two State of the Union addresses (2010, 2011)."""
    corpus = read_rda(root / R_LIB / "wordcloud/data/SOTU.RData")["SOTU"]
    docs = corpus.value[0] if isinstance(corpus, RAttr) else corpus[0]
    out = []
    for i, doc in enumerate(docs.value if isinstance(docs, RAttr) else docs):
        content = _columns(doc)["content"] if isinstance(doc, RAttr) else doc[0]
        out.append((f"State of the Union address {i + 1}", normalise("\n".join(content))))
    return out


# ---------------------------------------------------------------- dictd (Bierce)
def read_dictd(root: Path, name: str) -> list[tuple[str, str]]:
    """Entries of a dictd database (``.index`` lines ``word<TAB>b64offset<TAB>b64length``)."""
    folder = root / "usr/share/dictd"
    body = gzip.decompress((folder / f"{name}.dict.dz").read_bytes())  # dictzip is gzip
    entries = []
    for line in (folder / f"{name}.index").read_text(encoding="utf-8", errors="replace").splitlines():
        word, offset, length = line.split("\t")[:3]
        if word.startswith("00-database"):
            continue
        start, size = _b64(offset), _b64(length)
        entries.append(body[start : start + size].decode("utf-8", errors="replace"))
    return [(name, normalise(book_to_text("\n\n".join(entries).split("\n"))))]


def _b64(s: str) -> int:
    """dictd's base-64 numbers (alphabet A-Z a-z 0-9 + /, most significant digit first)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    value = 0
    for ch in s:
        value = value * 64 + alphabet.index(ch)
    return value


# ---------------------------------------------------------------- SWORD modules (zText/zCom)
_DROP = re.compile(r"<note\b.*?</note>|<title\b.*?</title>|<reference\b[^>]*>.*?</reference>", re.S)
_BREAK = re.compile(r"<(?:div|p|lb|l|item)\b[^>]*(?:sID|eID|/)[^>]*>|</?(?:p|item|l|list)\b[^>]*>")
_TAG = re.compile(r"<[^>]+>")


def osis_to_text(markup: str) -> str:
    """Plain prose from OSIS markup: notes, headings and cross-references dropped, paragraphs kept."""
    text = _TAG.sub("", _BREAK.sub("\n", _DROP.sub("", markup)))
    return normalise(html.unescape(text))


def read_sword_entries(folder: Path) -> list[str]:
    """Every distinct entry of a SWORD compressed module (zText, zCom, zCom4), in canonical order.

    Per testament: ``?zs`` holds (offset, compressed size, size) of each zlib block of ``?zz``
    (little-endian uint32); ``?zv`` holds (block, offset, size) for each verse, with a 2-byte size
    (zText, zCom) or a 4-byte one (zCom4), told apart by which layout fits the blocks. A
    commentary links many verses to one entry: each (block, offset, size) is read once.
    """
    seen, out = set(), []
    for testament in ("ot", "nt"):
        letter = next((c for c in "bcv" if (folder / f"{testament}.{c}zs").is_file()), None)
        if letter is None or not (folder / f"{testament}.{letter}zs").stat().st_size:
            continue
        index = (folder / f"{testament}.{letter}zs").read_bytes()
        data = (folder / f"{testament}.{letter}zz").read_bytes()
        blocks = [zlib.decompress(data[o : o + c]) for o, c, _ in struct.iter_unpack("<III", index)]
        verses = (folder / f"{testament}.{letter}zv").read_bytes()
        entries = None
        for size, fmt in ((10, "<IIH"), (12, "<III")):
            if len(verses) % size == 0:
                cand = list(struct.iter_unpack(fmt, verses))
                if all(not n or (b < len(blocks) and o + n <= len(blocks[b])) for b, o, n in cand):
                    entries = cand
                    break
        if entries is None:
            raise ValueError(f"{folder}: {testament}.{letter}zv fits neither the 10- nor the 12-byte verse index")
        for entry in entries:
            if entry[2] and entry not in seen:
                seen.add(entry)
                b, o, n = entry
                out.append(blocks[b][o : o + n].decode("utf-8", errors="replace"))
    return out


def read_sword(root: Path, kind: str, module: str, title: str) -> list[tuple[str, str]]:
    return [(title, osis_to_text(" ".join(read_sword_entries(root / SWORD / kind / module))))]


SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        Source("mobydick", "r-cran-tokenizers", "MIT (package); Melville's novel (1851) public domain; "
               "Project Gutenberg header and licence stripped", "fiction", read_mobydick),
        Source("tidytext-books", "r-cran-tidytext", "MIT (package); Gutenberg texts, public domain in the US",
               "fiction", lambda root: read_tidytext_books(root, titles=("Twenty Thousand Leagues under the Sea",
                                                                        "The War of the Worlds"))),
        Source("great-expectations", "r-cran-tidytext", "MIT (package); Dickens (1861), public domain",
               "fiction", lambda root: read_tidytext_books(root, titles=("Great Expectations",)), role="judge"),
        Source("sotu", "r-cran-wordcloud", "LGPL-2.1 (package); US government works, public domain",
               "speeches", read_sotu),
        Source("devil", "dict-devil", "public domain (Bierce 1911; copyright expired, per debian/copyright)",
               "essays", lambda root: read_dictd(root, "devil")),
        Source("web", "sword-text-web", "public domain (World English Bible; debian/copyright)", "scripture",
               lambda root: read_sword(root, "texts/ztext", "engWEB2015eb", "World English Bible")),
        Source("kjv", "sword-text-kjv", "public domain outside the UK (King James Version, 1611; Crown "
               "letters patent in the UK; debian/copyright)", "scripture",
               lambda root: read_sword(root, "texts/ztext", "engKJV2006eb", "King James Version")),
        Source("mhcc", "sword-comm-mhcc", "public domain (Matthew Henry's Concise Commentary; debian/copyright)",
               "commentary",
               lambda root: read_sword(root, "comments/zcom", "mhcc", "Matthew Henry's Concise Commentary")),
        Source("tdavid", "sword-comm-tdavid", "public domain (Spurgeon's Treasury of David, 1869-1885; "
               "debian/copyright)", "commentary",
               lambda root: read_sword(root, "comments/zcom", "tdavid", "Spurgeon, The Treasury of David")),
        Source("scofield", "sword-comm-scofield", "public domain (Scofield Reference Notes, 1917; debian/copyright)",
               "commentary", lambda root: read_sword(root, "comments/zcom", "scofield", "Scofield Reference Notes")),
    )
}
