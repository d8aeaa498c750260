"""scripts/prepare_data.py and scripts/corpus_sources.py on small data made here (no .deb needed)."""
from __future__ import annotations

import gzip
import struct
import sys
import zlib
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from corpus_sources import (  # noqa: E402
    SOURCES,
    _b64,
    normalise,
    osis_to_text,
    read_dictd,
    read_sword_entries,
    strip_gutenberg,
)
from prepare_data import BOOKS, assemble, leaked_snippets, split_austen, split_heldout  # noqa: E402


def _books() -> dict[str, list[str | None]]:
    """Six tiny 'novels' of wrapped lines with blank lines between paragraphs (as janeaustenr stores them)."""
    gen = torch.Generator().manual_seed(0)
    words = "she said that he had been very kind to her sister and to all the family at the hall".split()
    books = {}
    for b, name in enumerate(BOOKS):
        lines: list[str | None] = []
        for p in range(60):
            idx = torch.randint(0, len(words), (24,), generator=gen).tolist()
            para = f"{name} {p}: " + " ".join(words[i] for i in idx) + "."
            lines += [para[:50], para[50:], ""]
        books[name] = lines
    return books


def test_extra_sources_leave_the_austen_split_untouched() -> None:
    books = _books()
    train, heldout, stats = split_austen(books, 0.03)
    corpus = assemble(train, [("train", "Call me Ishmael.\nSome years ago."), ("judge", "My father's family name."),
                              ("train", "In the beginning.")])
    again_train, again_heldout, _ = split_austen(books, 0.03)
    assert (again_train, again_heldout) == (train, heldout)
    assert corpus["train"].startswith(train)
    assert corpus["train"][len(train):] == "Call me Ishmael.\nSome years ago.\nIn the beginning.\n"
    assert corpus["judge"] == "My father's family name.\n"
    assert heldout not in corpus["train"] and "My father" not in corpus["train"]
    # the held-out text is, book by book, split_heldout's passage: no held-out paragraph is trained on
    for name in BOOKS:
        book_heldout = split_heldout("\n".join(p for p in _paragraphs(books[name])), 0.03)[1]
        assert book_heldout in heldout
        assert all(para not in train.split("\n") for para in book_heldout.split("\n"))
        assert stats[name]["heldout_chars"] == len(book_heldout) > 0


def _paragraphs(lines: list[str | None]) -> list[str]:
    out, cur = [], []
    for line in lines:
        if line:
            cur.append(line.strip())
        elif cur:
            out.append(" ".join(cur))
            cur = []
    return out + ([" ".join(cur)] if cur else [])


@pytest.mark.parametrize("repeat", [2, 3])
def test_austen_repeat_weights_austen_and_keeps_the_extras_once(repeat: int) -> None:
    corpus = assemble("Emma.\n", [("train", "Call me Ishmael."), ("judge", "Pip.")], austen_repeat=repeat)
    assert corpus["train"] == "Emma.\n" * repeat + "Call me Ishmael.\n"
    assert corpus["judge"] == "Pip.\n"


@pytest.mark.parametrize("repeat", [0, -1, 1.5])
def test_austen_repeat_must_be_a_positive_integer(repeat: object) -> None:
    with pytest.raises(ValueError, match="austen_repeat"):
        assemble("Emma.\n", [], austen_repeat=repeat)


def test_assemble_rejects_an_unknown_role() -> None:
    with pytest.raises(ValueError, match="role='heldout'"):
        assemble("a\n", [("heldout", "b")])


def test_leaked_snippets_finds_held_out_text_inside_another_source() -> None:
    heldout = "".join(f"Paragraph {i} of a held-out passage that nobody trains on. " for i in range(40))
    assert leaked_snippets(heldout, "unrelated text " * 100) == 0
    assert leaked_snippets(heldout, "prefix " + heldout[1000:1400] + " suffix") > 0


def _sword_module(folder: Path, entries_per_testament: list[list[bytes]], *, wide: bool) -> None:
    """Write a zText-like module: two zlib blocks per testament, a verse index linking verse 2 to verse 1."""
    folder.mkdir(parents=True)
    for testament, entries in zip(("ot", "nt"), entries_per_testament):
        half = len(entries) // 2
        blocks = [b"".join(entries[:half]), b"".join(entries[half:])]
        data, index, verses = b"", b"", b""
        for block_no, (block, chunk) in enumerate(zip(blocks, (entries[:half], entries[half:]))):
            packed = zlib.compress(block)
            index += struct.pack("<III", len(data), len(packed), len(block))
            data += packed
            offset = 0
            for i, entry in enumerate(chunk):
                fmt = "<III" if wide else "<IIH"
                verses += struct.pack(fmt, block_no, offset, len(entry))
                if block_no == 0 and i == 0:  # a commentary links the next verse to the same entry
                    verses += struct.pack(fmt, block_no, offset, len(entry))
                offset += len(entry)
            verses += struct.pack("<III" if wide else "<IIH", 0, 0, 0)  # an empty verse
        (folder / f"{testament}.bzs").write_bytes(index)
        (folder / f"{testament}.bzz").write_bytes(data)
        (folder / f"{testament}.bzv").write_bytes(verses)


@pytest.mark.parametrize("wide", [False, True], ids=["zText-10-byte", "zCom4-12-byte"])
def test_sword_reader_returns_each_entry_once_in_order(tmp_path: Path, wide: bool) -> None:
    ot = [f"<w>Verse {i}</w> of the old. ".encode() for i in range(6)]
    nt = ["<div sID='x' type='x-p'/>New \u201cverse\u201d {}.".format(i).encode() for i in range(4)]
    _sword_module(tmp_path / "mod", [ot, nt], wide=wide)
    entries = read_sword_entries(tmp_path / "mod")
    assert entries == [e.decode() for e in ot + nt]


def test_osis_to_text_keeps_prose_and_paragraphs_only() -> None:
    markup = ('<title type="x-s">Psalm 1</title><div sID="a" type="x-p"/><w lemma="strong:H1">Blessed</w> is the '
              'man<note type="x-footnote">a note</note> &amp; \u2019tis so.<div eID="a" type="x-p"/>'
              '<div sID="b" type="x-p"/>\u00b6 He shall be like a tree\u2014planted.')
    assert osis_to_text(markup) == "Blessed is the man & 'tis so.\nHe shall be like a tree--planted."


def test_strip_gutenberg_keeps_the_body_only() -> None:
    text = ("Header\n*** START OF THIS PROJECT GUTENBERG EBOOK X ***\nCall me Ishmael.\n"
            "*** END OF THIS PROJECT GUTENBERG EBOOK X ***\nLicence")
    assert strip_gutenberg(text).strip() == "Call me Ishmael."
    assert strip_gutenberg("no markers") == "no markers"


def test_read_dictd_skips_database_headers(tmp_path: Path) -> None:
    folder = tmp_path / "usr/share/dictd"
    folder.mkdir(parents=True)
    body = b"00-database-short\n  Test\nABSURDITY, n.  A statement or belief\nmanifestly inconsistent.\n"
    (folder / "t.dict.dz").write_bytes(gzip.compress(body))
    head = body.index(b"ABSURDITY")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    def enc(n: int) -> str:
        return alphabet[n // 64] + alphabet[n % 64]
    (folder / "t.index").write_text(f"00-database-short\tA\t{enc(head)}\n"
                                    f"absurdity\t{enc(head)}\t{enc(len(body) - head)}\n")
    assert _b64(enc(head)) == head
    assert read_dictd(tmp_path, "t") == [("t", "ABSURDITY, n. A statement or belief manifestly inconsistent.")]


def test_registry_roles_and_normalise() -> None:
    assert {s.role for s in SOURCES.values()} == {"train", "judge"}
    assert all(s.licence and s.package for s in SOURCES.values())
    assert normalise("  A\u00a0 b \n\n\u201cc\u201d ") == 'A b\n"c"'
