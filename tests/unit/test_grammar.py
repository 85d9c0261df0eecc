"""Constrained decoding (hoprag/llm/grammar.py) with a small byte-level BPE tokenizer trained here:
whatever the model's scores, greedy decoding under the processor writes what the grammar accepts."""

from __future__ import annotations

import json
import re

import pytest
import torch

from hoprag.extraction.prompts import OPENIE_JSON_SCHEMA, OPENIE_LINES_GRAMMAR
from hoprag.llm.grammar import DecodingGrammars

pytest.importorskip("llguidance")  # a main dependency; the message names it if an install lost it

SAMPLES = [
    "(Juno Halleck | born in | Quifen)\n(Juno Halleck | studied at | Carrow College)\n",
    '{"named_entities": ["Juno Halleck", "Quifen"], "triples": [["Juno Halleck", "born in", "Quifen"]]}',
    "Juno Halleck was born in Quifen. She studied at Carrow College. [1, 2] | x y z",
]
LINE = re.compile(r"\([^|()\n]{1,120}\|[^|()\n]{1,120}\|[^|()\n]{1,120}\)\n")


@pytest.fixture(scope="module")
def grammars() -> DecodingGrammars:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<eos>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    raw.train_from_iterator(SAMPLES * 20, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>")
    return DecodingGrammars(tokenizer, len(tokenizer))


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
    assert set(value) <= {"named_entities", "triples"}
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
    for _, triples in _FEW_SHOT:
        assert all(LINE.fullmatch(_triple_line(t) + "\n") for t in triples)
