"""The GNN retriever (GFM-RAG's QueryNBFNet): message passing by hand, subgraph layout, batching,
export round trip and retrieval through the shared loader."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hoprag.glm.artifact import RetrieverLoadError
from hoprag.glm.sampler import SamplerConfig
from hoprag.gnn.data import GNNExample, build_example, collate
from hoprag.gnn.model import QueryNBFNet
from hoprag.gnn.retriever import GNNRetriever, load_gnn_retriever_model, save_gnn_retriever
from hoprag.gnn.settings import GNNSettings
from hoprag.kg.index import KGIndex
from hoprag.retrieval.base import RetrievalQuery
from hoprag.retrieval.loading import RetrieverSpecError, load_retriever


def _tiny_example(q_dim: int = 4) -> GNNExample:
    """Three nodes, triples 0 -r0-> 1 and 1 -r1-> 2 (each edge in both directions), seed 0."""
    rng = np.random.default_rng(0)
    rel = rng.normal(size=(2, q_dim)).astype(np.float32)
    return GNNExample(
        entity_ids=np.array([10, 11, 12]),
        edge_src=np.array([0, 1, 1, 2]),
        edge_dst=np.array([1, 2, 0, 1]),
        edge_relation=np.array([0, 1, 2, 3]),
        relation_vectors=np.concatenate([rel, -rel]),
        seed_weights=np.array([0.5, 0.0, 0.0], dtype=np.float32),
        question_vector=rng.normal(size=q_dim).astype(np.float32),
        labels=np.array([0.0, 0.0, 1.0], dtype=np.float32),
    )


def _hand_forward(model: QueryNBFNet, ex: GNNExample) -> list[float]:
    """The NBFNet forward written out node by node and edge by edge, from the model's weights."""
    q = model.question_proj(torch.as_tensor(ex.question_vector))
    boundary = [float(ex.seed_weights[n]) * q for n in range(len(ex.entity_ids))]
    relations = model.relation_proj(torch.as_tensor(ex.relation_vectors))
    hidden = list(boundary)
    for layer in model.layers:
        rel = layer.relation_mlp(relations)
        new = []
        for node in range(len(hidden)):
            agg = boundary[node].clone()
            for s, d, r in zip(ex.edge_src, ex.edge_dst, ex.edge_relation, strict=True):
                if d == node:
                    agg = agg + hidden[s] * rel[r]
            out = torch.relu(layer.norm(layer.update(torch.cat([hidden[node], agg]))))
            new.append(out + hidden[node])
        hidden = new
    return [float(model.scorer(torch.cat([h, q]))) for h in hidden]


def test_forward_matches_a_hand_computed_message_pass():
    torch.manual_seed(0)
    model = QueryNBFNet(GNNSettings(hidden_dim=8, num_layers=2, question_dim=4)).eval()
    ex = _tiny_example()
    with torch.no_grad():
        logits = model(collate([ex]))
        expected = _hand_forward(model, ex)
    assert logits.shape == (1, 3)
    assert np.allclose(logits[0].numpy(), expected, atol=1e-5)


def test_information_travels_one_hop_per_layer():
    """With one layer only the seed's neighbour hears from the seed: node 2 (two hops away) gets the
    same state whatever the question, node 1 does not."""
    torch.manual_seed(0)
    model = QueryNBFNet(GNNSettings(hidden_dim=8, num_layers=1, question_dim=4, short_cut=False)).eval()
    a, b = _tiny_example(), _tiny_example()
    b.seed_weights = np.array([2.0, 0.0, 0.0], dtype=np.float32)  # a stronger seed signal
    with torch.no_grad():
        la, lb = model(collate([a]))[0], model(collate([b]))[0]
    assert torch.isclose(la[2], lb[2])
    assert not torch.isclose(la[1], lb[1])


def test_a_batch_is_the_disjoint_union_of_its_examples():
    torch.manual_seed(0)
    model = QueryNBFNet(GNNSettings(hidden_dim=8, num_layers=3, question_dim=4)).eval()
    small = _tiny_example()
    other = _tiny_example()
    other.entity_ids = np.array([1, 2])
    other.edge_src, other.edge_dst, other.edge_relation = np.array([0, 1]), np.array([1, 0]), np.array([0, 1])
    other.relation_vectors = other.relation_vectors[:2]
    other.seed_weights = np.array([1.0, 0.0], dtype=np.float32)
    other.labels = np.array([0.0, 1.0], dtype=np.float32)
    with torch.no_grad():
        together = model(collate([small, other]))
        alone = [model(collate([small]))[0], model(collate([other]))[0]]
    batch = collate([small, other])
    assert batch.entity_mask.tolist() == [[True, True, True], [True, True, False]]
    assert torch.allclose(together[0], alone[0], atol=1e-6)
    assert torch.allclose(together[1, :2], alone[1], atol=1e-6)


@pytest.mark.parametrize("aggregate", ["mean", "max"])
def test_other_aggregations_run_and_differ_from_sum(aggregate):
    torch.manual_seed(0)
    ex = _tiny_example()
    base = QueryNBFNet(GNNSettings(hidden_dim=8, num_layers=2, question_dim=4)).eval()
    other = QueryNBFNet(GNNSettings(hidden_dim=8, num_layers=2, question_dim=4, aggregate=aggregate)).eval()
    other.load_state_dict(base.state_dict())
    with torch.no_grad():
        assert not torch.allclose(base(collate([ex])), other(collate([ex])))


def test_build_example_lays_out_the_sampled_subgraph(glm_index):
    index = glm_index
    ex = build_example(
        index,
        ["Mira Castell"],
        np.ones(384, dtype=np.float32),
        SamplerConfig(max_hops=2, max_triplets=10),
        supporting_entities=["Tavin Orlo", "Nowhere Person"],
    )
    names = [index.entity_names[e] for e in ex.entity_ids]
    assert names == sorted(names, key=index.entity_id)
    assert {"mira castell", "dornwick", "the ember road", "tavin orlo", "halvaria"} == set(names)
    # every triple once in each direction; inverse edges use the negated relation vector
    m = len(ex.edge_src) // 2
    assert np.array_equal(ex.edge_src[:m], ex.edge_dst[m:]) and np.array_equal(
        ex.edge_dst[:m], ex.edge_src[m:]
    )
    r = len(ex.relation_vectors) // 2
    assert np.allclose(ex.relation_vectors[r:], -ex.relation_vectors[:r])
    assert np.array_equal(ex.edge_relation[m:], ex.edge_relation[:m] + r)
    forward = {(names[s], names[d]) for s, d in zip(ex.edge_src[:m], ex.edge_dst[:m], strict=True)}
    assert ("mira castell", "dornwick") in forward and ("the ember road", "tavin orlo") in forward
    # the seed's weight is 1 / the number of documents it occurs in; other nodes start at 0
    seed = names.index("mira castell")
    indptr = index.entity_documents[0]
    df = int(indptr[ex.entity_ids[seed] + 1] - indptr[ex.entity_ids[seed]])
    assert ex.seed_weights[seed] == pytest.approx(1.0 / df)
    assert ex.seed_weights.sum() == pytest.approx(1.0 / df)
    assert ex.labels.tolist() == [1.0 if n == "tavin orlo" else 0.0 for n in names]
    assert ex.positives_outside_subgraph == 0  # an unknown name is not an entity of the KG


def test_export_round_trip_and_the_shared_loader(tmp_path, small_index):
    torch.manual_seed(0)
    settings = GNNSettings(hidden_dim=16, num_layers=2, doc_ranker="score_idf")
    model = QueryNBFNet(settings)
    out = save_gnn_retriever(tmp_path / "run" / "retriever", model, settings)
    loaded, loaded_settings = load_gnn_retriever_model(tmp_path / "run")
    assert loaded_settings == settings
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, loaded.state_dict()[name])
    index = KGIndex(small_index)
    retriever = load_retriever(str(out), index)
    assert isinstance(retriever, GNNRetriever)
    results = retriever.retrieve(
        [
            RetrievalQuery("Which drug treats Kellan fever?", ("kellan fever",)),
            RetrievalQuery("Who directed The Ember Road?", ()),
        ],
        k=2,
    )
    assert "Ostarizumab" in [d.title for d in results[0].documents]
    assert {e for e, _ in results[0].entities} == {"kellan fever", "ostarizumab"}
    assert results[1].notes == ["no linked seed entity: dense fallback"]


def test_a_damaged_gnn_directory_is_a_clear_error(tmp_path, small_index):
    settings = GNNSettings(hidden_dim=16, num_layers=2)
    out = save_gnn_retriever(tmp_path / "retriever", QueryNBFNet(settings), settings)
    # the config now describes a deeper network than the stored weights
    (out / "retriever.json").write_text(
        (out / "retriever.json").read_text().replace('"num_layers": 2', '"num_layers": 3')
    )
    with pytest.raises(RetrieverLoadError, match="does not match its config"):
        load_gnn_retriever_model(out)
    with pytest.raises(RetrieverSpecError, match="does not match its config"):
        load_retriever(str(out), KGIndex(small_index))


def test_bf16_weights_take_fp32_batches():
    """DeepSpeed casts the weights to bf16 on GPUs and leaves the batch in fp32 (gnn-gpu.yaml)."""
    torch.manual_seed(0)
    model = QueryNBFNet(GNNSettings(hidden_dim=8, num_layers=2, question_dim=4)).eval()
    batch = collate([_tiny_example()])
    with torch.no_grad():
        full = model(batch)
        half = model.bfloat16()(batch)
    assert half.dtype == torch.bfloat16
    assert torch.allclose(half.float(), full, atol=0.1)


def test_relation_vectors_of_another_embedder_are_refused(glm_index):
    with pytest.raises(ValueError, match="same model"):
        build_example(glm_index, ["Mira Castell"], np.ones(768, dtype=np.float32), SamplerConfig())
    wide = _tiny_example(q_dim=4)
    wide.question_vector = np.ones(8, dtype=np.float32)
    with pytest.raises(ValueError, match="same model"):
        collate([wide])


def test_the_gnn_retriever_refuses_an_index_of_another_embedder(small_index):
    settings = GNNSettings(hidden_dim=8, num_layers=1, question_embedder={"model": "/models/other-384d"})
    with pytest.raises(RetrieverLoadError, match="build the index with that embedder"):
        GNNRetriever(KGIndex(small_index), QueryNBFNet(settings), settings, question_embedder=None)


def test_serving_preflight_accepts_a_gnn_directory(tmp_path, small_index):
    from serving.builder import check_sources
    from serving.settings import QAAppSettings

    settings = GNNSettings(hidden_dim=8, num_layers=1)
    out = save_gnn_retriever(tmp_path / "gnn", QueryNBFNet(settings), settings)
    check_sources(QAAppSettings(index=str(small_index), retriever=str(out)))
