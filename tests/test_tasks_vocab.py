"""tasks.vocab: one id per word, fixed by TOKENS, read by the embedded model's tokenizer class."""
from __future__ import annotations

from dllm_viz.models.tokenizer import EmbeddedTokenizer
from dllm_viz.tasks import FAMILIES, TOKENS, build_tokenizer, prompts, tokenizer
from dllm_viz.tasks.vocab import IDS, SPECIALS, UNK


def test_every_word_is_one_token_at_its_fixed_id(tmp_path):
    tok = tokenizer()
    assert len(set(TOKENS)) == len(TOKENS) == tok.vocab_size
    assert (tok.pad_token_id, tok.eos_token_id, tok.mask_token_id) == (0, 1, 2) == tuple(IDS[s] for s in SPECIALS[:3])
    for family in FAMILIES:
        for task in prompts(family, 5, 0):
            ids = tok.encode(task.prompt)
            assert ids == [IDS[w] for w in task.words()] and tok.decode(ids) == task.prompt
    build_tokenizer().save(str(tmp_path / "tokenizer.json"))
    again = EmbeddedTokenizer.from_file(tmp_path / "tokenizer.json")
    assert again.get_vocab() == IDS and again.encode("sort : b a c =") == tok.encode("sort : b a c =")


def test_typed_specials_and_unknown_words_are_text():
    tok = tokenizer()
    ids = tok.encode("copy : <mask> <pad> zz a =")
    assert ids[2:5] == [IDS[UNK]] * 3 and tok.mask_token_id not in ids and tok.pad_token_id not in ids
    assert tok.decode([tok.mask_token_id, IDS["a"]]) == "<mask> a"
