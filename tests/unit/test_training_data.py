"""Training data: the data config, epoch plans (mixing indexes), index checks, encoded columns."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from training.config import TrainConfig, TrainData
from training.data import EpochGeometry, encode_rows, epoch_plan, examples_from_columns, mix_counts
from training.trainer import with_indexes
from training.trainset import TrainDataError, TrainSet, inspect_sources


def test_index_names_default_to_directories_and_are_told_apart_by_their_parent():
    data = TrainData.model_validate({"indexes": [{"path": "runs/a/index"}, {"path": "runs/b/index"}]})
    assert [s.label for s in data.indexes] == ["a-index", "b-index"]
    data = TrainData.model_validate({"indexes": [{"path": "runs/films"}, {"path": "x", "name": "bio"}]})
    assert [s.label for s in data.indexes] == ["films", "bio"]


@pytest.mark.parametrize(
    ("indexes", "message"),
    [
        ([{"path": "a", "name": "x"}, {"path": "b", "name": "x"}], "unique"),
        ([{"path": "a", "weight": 1.0}, {"path": "b"}], "every index or on none"),
        ([{"path": "a", "weight": 0}], "greater than 0"),
        ([{"path": "a", "name": "has/slash"}], "pattern"),
        ([{"path": "a", "wieght": 1}], "Extra inputs"),
    ],
)
def test_bad_data_configs_are_refused(indexes, message):
    with pytest.raises(ValidationError, match=message):
        TrainData.model_validate({"indexes": indexes})


def test_index_arguments_replace_the_configs_list():
    config = TrainConfig.model_validate(
        {"data": {"indexes": [{"path": "c", "weight": 2}], "streaming": False}}
    )
    assert with_indexes(config, None) is config
    one = with_indexes(config, Path("runs/x"))
    assert [(s.path, s.weight) for s in one.data.indexes] == [(Path("runs/x"), None)]
    assert one.data.streaming is False
    two = with_indexes(config, ["runs/a/index", "runs/b/index"])
    assert [s.label for s in two.data.indexes] == ["a-index", "b-index"]
    with pytest.raises(TrainDataError, match="unique"):
        with_indexes(config, ["runs/a/index", "runs/a/index"])


def test_mix_counts_are_proportional_and_add_up():
    assert mix_counts([30, 10], None, 40) == [30, 10]
    assert mix_counts([30, 10], None, 20) == [15, 5]
    assert mix_counts([30, 10], [1.0, 1.0], 40) == [20, 20]
    assert mix_counts([5, 5, 5], [1.0, 1.0, 1.0], 10) == [4, 3, 3]  # largest remainder, ties to the first
    assert sum(mix_counts([7, 3, 11], [0.2, 0.5, 0.3], 21)) == 21


def test_proportional_epoch_plan_uses_every_question_once_and_reshuffles_per_epoch():
    counts = [7, 3]
    plan = epoch_plan(counts, None, seed=0, epoch=0, size=10)
    assert sorted(map(tuple, plan.tolist())) == [(0, r) for r in range(7)] + [(1, r) for r in range(3)]
    assert np.array_equal(plan, epoch_plan(counts, None, seed=0, epoch=0, size=10))  # deterministic
    assert not np.array_equal(plan, epoch_plan(counts, None, seed=0, epoch=1, size=10))
    assert not np.array_equal(plan, epoch_plan(counts, None, seed=1, epoch=0, size=10))
    # rounding the epoch down to whole steps drops a different question each epoch
    head = epoch_plan(counts, None, seed=0, epoch=0, size=8)
    assert np.array_equal(head, plan[:8])


def test_weighted_epoch_plan_cycles_a_small_index_and_subsamples_a_large_one():
    plan = epoch_plan([10, 2], [1.0, 1.0], seed=3, epoch=0, size=12)
    by_index = Counter(int(i) for i in plan[:, 0])
    assert by_index == {0: 6, 1: 6}
    small = Counter(int(r) for i, r in plan.tolist() if i == 1)
    assert small == {0: 3, 1: 3}  # 3 full passes over the small index's 2 questions
    large = [r for i, r in plan.tolist() if i == 0]
    assert len(set(large)) == 6  # 6 distinct questions of the large one


def test_epoch_geometry_is_whole_steps_of_every_worker():
    assert EpochGeometry.of(9, world=2, micro=2) == EpochGeometry(8, 2)
    assert EpochGeometry.of(100, world=3, micro=2) == EpochGeometry(96, 16)
    with pytest.raises(TrainDataError, match="cannot fill one step"):
        EpochGeometry.of(3, world=2, micro=2)


def _config(path: Path, **data) -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "train_split": "test",
            "validation_fraction": 0,
            "data": {"indexes": [{"path": str(path), "name": "small"}], **data},
        }
    )


def test_inspect_sources_counts_usable_questions_and_names_bad_indexes(small_index, glm_index, tmp_path):
    (source,) = inspect_sources(_config(small_index))
    assert (source.name, source.n_train, source.n_val) == ("small", 1, 0)  # one question is linked + gold
    with pytest.raises(TrainDataError, match=r"index 'small' \(.*missing\): .* is not a hoprag index"):
        inspect_sources(_config(tmp_path / "missing"))
    with pytest.raises(TrainDataError, match="no processed questions"):
        inspect_sources(_config(glm_index.path))
    no_train = _config(small_index).model_copy(update={"train_split": "train"})
    with pytest.raises(TrainDataError, match=r"index 'small'.*no 'train' questions"):
        inspect_sources(no_train)
    with pytest.raises(TrainDataError, match="no index to train on"):
        inspect_sources(TrainConfig())


def test_encoded_columns_collate_like_the_examples_they_came_from(small_index, embedder):
    from hoprag.glm.backbone import load_tokenizer
    from hoprag.glm.data import build_example, collate

    config = _config(small_index)
    sources = inspect_sources(config)
    trainset = TrainSet(sources, config)
    tokenizer = load_tokenizer(config.backbone)
    columns = encode_rows(trainset, [(0, 0), (0, 0)], tokenizer, embedder, config)
    assert columns["index"] == [0, 0]
    rebuilt = examples_from_columns({k: np.asarray(v, dtype=object) for k, v in columns.items()}, config)
    row = trainset.train[0][0]
    direct = build_example(
        trainset.indexes[0],
        row["question"],
        row["question_entities"],
        embedder.encode([row["question"]])[0],
        tokenizer,
        config.glm.sampler,
        supporting_entities=row["supporting_entities"],
    )
    a = collate(rebuilt, tokenizer.pad_token_id, 32, 128)
    b = collate([direct, direct], tokenizer.pad_token_id, 32, 128)
    for name in ("input_ids", "node_positions", "buckets", "attention", "pooling", "entity_mask", "labels"):
        assert np.array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name))), name
    # The same question's vector: encoded in a batch of two here and alone above, and MiniLM's
    # batched matrix products may round differently (~1e-7) with the batch size.
    assert np.allclose(np.asarray(a.question_vectors), np.asarray(b.question_vectors), atol=1e-5)


def test_a_gnn_run_needs_the_index_embedder_as_its_question_embedder(small_index, embedder):
    base = _config(small_index).model_dump(mode="json")
    gnn = TrainConfig.model_validate({**base, "retriever": "gnn"})
    (source,) = inspect_sources(gnn)
    assert source.n_train == 1
    other = TrainConfig.model_validate(
        {**base, "retriever": "gnn", "gnn": {"question_embedder": {"model": "/models/other"}}}
    )
    with pytest.raises(TrainDataError, match="the GNN's question embedder is /models/other"):
        inspect_sources(other)
    # the GNN's columns go through the same encode → columns → examples path as the GLM's
    from hoprag.gnn.data import collate

    trainset = TrainSet([source], gnn)
    columns = encode_rows(trainset, [(0, 0)], None, embedder, gnn)
    (example,) = examples_from_columns({k: np.asarray(v, dtype=object) for k, v in columns.items()}, gnn)
    assert example.relation_vectors.shape[1] == 384 and len(example.labels) == len(example.entity_ids) > 0
    assert collate([example]).entity_mask.shape == (1, len(example.entity_ids))
