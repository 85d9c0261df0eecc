"""Constrained decoding (hoprag/llm/grammar.py) with small tokenizers trained here, one of each
vocabulary family hoprag/llm/tokenizer_view.py reads itself (GPT-2 byte-level; SentencePiece pieces
with byte fallback): whatever the model's scores, greedy decoding under the processor writes what
the grammar accepts, and the tokenizer view equals llguidance's own, token by token."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import torch

from hoprag.extraction.prompts import OPENIE_JSON_SCHEMA, OPENIE_LINES_GRAMMAR
from hoprag.llm.grammar import DecodingGrammars
from hoprag.llm.tokenizer_view import token_bytes, tokenizer_view

pytest.importorskip("llguidance")  # a main dependency; the message names it if an install lost it

SAMPLES = [
    "(Juno Halleck | born in | Quifen)\n(Juno Halleck | studied at | Carrow College)\n",
    '{"named_entities": ["Juno Halleck", "Quifen"], "triples": [["Juno Halleck", "born in", "Quifen"]]}',
    "Juno Halleck was born in Quifen. She studied at Carrow College. [1, 2] | x y z",
]
LINE = re.compile(r"\([^|()\n]{1,120}\|[^|()\n]{1,120}\|[^|()\n]{1,120}\)\n")


def _byte_level_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<eos>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    raw.train_from_iterator(SAMPLES * 20, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>")


def _byte_fallback_tokenizer() -> Any:
    """Gemma's layout: spaces as ``▁``, the 256 ``<0xNN>`` byte pieces, BPE merges over the rest."""
    from tokenizers import Tokenizer, decoders, models, normalizers, trainers
    from transformers import PreTrainedTokenizerFast

    trained = Tokenizer(models.BPE())
    trained.normalizer = normalizers.Replace(" ", "\u2581")
    trained.train_from_iterator(SAMPLES * 20, trainers.BpeTrainer(vocab_size=150, special_tokens=["<eos>"]))
    model = json.loads(trained.to_str())["model"]
    vocab = {"<eos>": 0, "<table>": 1, **{f"<0x{b:02X}>": 2 + b for b in range(256)}}
    for piece in sorted(model["vocab"], key=model["vocab"].get):
        vocab.setdefault(piece, len(vocab))
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    raw = Tokenizer(models.BPE(vocab, merges, byte_fallback=True))
    raw.normalizer = normalizers.Replace(" ", "\u2581")
    raw.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()]
    )
    raw.add_special_tokens(["<eos>"])
    raw.add_tokens(["<table>"])  # an added tag that is not marked special (Gemma has 72)
    return PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>")


TOKENIZERS = {"byte_level": _byte_level_tokenizer, "byte_fallback": _byte_fallback_tokenizer}


@pytest.fixture(scope="module", params=sorted(TOKENIZERS))
def tokenizer(request) -> Any:
    return TOKENIZERS[request.param]()


@pytest.fixture(scope="module")
def grammars(tokenizer) -> DecodingGrammars:
    return DecodingGrammars(tokenizer, len(tokenizer))


def test_the_tokenizer_view_read_from_the_vocabulary_equals_llguidances_own(tokenizer):
    import llguidance.hf

    from benchmarks.grammar import differing_tokens

    assert token_bytes(tokenizer) is not None  # the family is recognized, not handed to llguidance
    ours = tokenizer_view(tokenizer, len(tokenizer))
    theirs = llguidance.hf.from_tokenizer(tokenizer, n_vocab=len(tokenizer))
    assert ours.vocab_size == theirs.vocab_size and ours.eos_tokens == theirs.eos_tokens
    assert differing_tokens(ours, theirs, len(tokenizer)) == []  # bytes and special flags
    for text in [*SAMPLES, "héllo 日本\t\n\n <table> x"]:
        assert ours.tokenize_str(text) == theirs.tokenize_str(text)


def _metaspace_tokenizer() -> Any:
    """A T5-style Unigram vocabulary (Metaspace decoder): a family llguidance does not read."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    pieces = [("<eos>", 0.0), ("<unk>", 0.0), ("\u2581juno", -1.0), ("s", -2.0), ("\u2581", -3.0)]
    raw = Tokenizer(models.Unigram(pieces, unk_id=1))
    raw.pre_tokenizer = pre_tokenizers.Metaspace()
    raw.decoder = decoders.Metaspace()
    return PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>", unk_token="<unk>")


def test_a_tokenizer_llguidance_cannot_read_leaves_the_embedded_model_decoding_freely(tmp_path, caplog):
    """No view is guessed for another family: llguidance's own error, which the embedded model
    turns into one warning and free decoding (the tolerant parsers read the answer)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from hoprag.llm.base import GenerationParams
    from hoprag.llm.embedded import EmbeddedLLM, EmbeddedLLMConfig

    tokenizer = _metaspace_tokenizer()
    assert token_bytes(tokenizer) is None
    with pytest.raises(ValueError, match="decoder"):
        tokenizer_view(tokenizer, len(tokenizer))
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, eos_token_id=0, pad_token_id=0,
    )  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    model = EmbeddedLLM(EmbeddedLLMConfig(model_path=str(tmp_path), dtype="float32"))
    params = GenerationParams(4, grammar=OPENIE_LINES_GRAMMAR)
    with caplog.at_level("WARNING", logger="hoprag.llm.embedded"):
        first = model.generate(["juno"], params)
        second = model.generate(["juno"], params)
    assert first[0].ok and second[0].ok and first[0].text == second[0].text
    assert sum("constrained decoding is off" in r.getMessage() for r in caplog.records) == 1


def _decode(grammars: DecodingGrammars, grammar: str, seed: int, steps: int) -> tuple[str, object]:
    """Greedy decoding of a 'model' whose scores are random: the grammar alone shapes the text."""
    vocab = grammars.vocab_size
    processor = grammars.processor(grammar, batch_size=2, prompt_length=1)
    generator = torch.Generator().manual_seed(seed)
    ids = torch.zeros((2, 1), dtype=torch.long)
    eos = int(grammars._tokenizer.eos_token)  # the tokenizer view's end-of-sequence id
    for _ in range(steps):
        scores = torch.randn((2, vocab), generator=generator)
        choice = processor(ids, scores).argmax(dim=-1, keepdim=True)
        ids = torch.cat([ids, choice], dim=1)
        if int(choice[0, 0]) == eos:
            break
    tokens = [t for t in ids[0, 1:].tolist() if t != eos]
    return grammars._tokenizer.decode_str(tokens), processor


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_scores_still_write_well_formed_triple_lines(grammars, seed):
    grammar = grammars.grammar(lark=OPENIE_LINES_GRAMMAR)
    text, processor = _decode(grammars, grammar, seed, steps=60)
    complete, _, rest = text.rpartition("\n")
    lines = [line + "\n" for line in complete.split("\n") if line]
    assert all(LINE.fullmatch(line) for line in lines), text
    assert rest == "" or (rest.startswith("(") and "\n" not in rest)  # at most one line cut by the step limit
    assert processor.failed_rows == 0 and processor.masked_steps > 0


def test_random_scores_still_write_json_that_follows_the_schema(grammars):
    grammar = grammars.grammar(json_schema=OPENIE_JSON_SCHEMA)
    text, processor = _decode(grammars, grammar, seed=3, steps=400)
    assert text.startswith('{"')
    try:
        value = json.loads(text)
    except ValueError:  # cut by the step limit: a prefix of a valid answer, which json-repair closes
        import json_repair

        value = json_repair.loads(text)
    assert set(value) <= {"triples"}
    assert all(len(t) == 3 for t in value.get("triples", []))
    assert processor.failed_rows == 0


def test_a_grammar_allowing_the_models_best_token_leaves_the_scores_alone(grammars):
    grammar = grammars.grammar(lark=OPENIE_LINES_GRAMMAR)
    processor = grammars.processor(grammar, batch_size=1, prompt_length=1)
    open_paren = grammars._tokenizer.tokenize_str("(")[0]
    scores = torch.zeros((1, grammars.vocab_size))
    scores[0, open_paren] = 5.0
    assert processor(torch.zeros((1, 1), dtype=torch.long), scores) is scores
    assert processor.masked_steps == 0 and processor.steps == 1


def test_a_schema_that_cannot_be_decoded_to_is_named(grammars):
    with pytest.raises(ValueError, match="json grammar cannot be decoded to"):
        grammars.grammar(
            json_schema=json.dumps({"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}})
        )


def test_line_prompts_carry_the_line_grammar_and_json_prompts_their_schema():
    """What the embedded model constrains to: the OpenIE line prompts (student and few-shot) the
    triple-line grammar, the JSON chat prompts their schema; the answers of the few-shot examples
    are in the grammar's language."""
    from llguidance import LLMatcher  # noqa: F401 - the grammar engine is installed

    from hoprag.extraction.prompts import _FEW_SHOT, _triple_line, openie_prompt

    for spec in (openie_prompt("P.", "completion"), openie_prompt("P.", "completion", student=True)):
        assert spec.output_format == "lines" and spec.params.grammar == OPENIE_LINES_GRAMMAR
        assert spec.params.json_schema is None
    chat = openie_prompt("P.", "chat")
    assert chat.params.json_schema == OPENIE_JSON_SCHEMA and chat.params.grammar is None
    schema = json.loads(OPENIE_JSON_SCHEMA)
    for message in chat.prompt[2:-1:2]:  # the examples' answers follow the schema the model is held to
        answer = json.loads(message["content"])
        assert set(answer) == set(schema["required"]) == {"triples"}
        assert all(len(row) == 3 and all(isinstance(p, str) for p in row) for row in answer["triples"])
    for _, triples in _FEW_SHOT:
        assert all(LINE.fullmatch(_triple_line(t) + "\n") for t in triples)


def test_the_grammar_benchmark_times_both_views_and_finds_no_difference(tokenizer):
    from benchmarks.grammar import measure_views

    report = measure_views(tokenizer, repeats=2)
    assert report["read_from_vocabulary"] and report["differing_tokens"] == 0
    assert [row["view"] for row in report["builds"]] == [
        "hoprag tokenizer_view",
        "llguidance.hf.from_tokenizer",
    ]
    assert all(len(row["seconds"]) == 2 and row["median_s"] >= 0 for row in report["builds"])
