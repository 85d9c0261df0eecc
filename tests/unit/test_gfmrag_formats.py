"""GFM-RAG's data layouts: both raw spellings, both gold-document fields, pre-built stage1 graphs
(``hoprag index --graph``), ``hoprag export gfm-rag`` and the round trip between them."""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from hoprag.kg.index import KGIndex
from hoprag.kg.store import write_snapshot
from hoprag.kg.tables import KIND_EQUIVALENT
from indexing.config import IndexConfig, QuestionLinkingConfig, SynonymConfig
from indexing.corpus import CorpusError, Document, read_corpus
from indexing.gfmrag import read_stage1
from indexing.graph import build_tables
from indexing.pipeline import build_index_from_graph
from indexing.questions import link_questions, questions_table


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _json(path: Path, payload: Any) -> Path:
    return _write(path, json.dumps(payload))


# -- raw layouts -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["documents.json", "dataset_corpus.json"])
def test_both_raw_document_files_are_read(tmp_path: Path, name: str) -> None:
    _json(tmp_path / "d" / "raw" / name, {"France": "France is a country.", "Paris": "Paris is a city."})
    _json(tmp_path / "d" / "raw" / "test.json", [{"id": "q1", "question": "Capital of France?"}])
    corpus = read_corpus(tmp_path / "d")
    assert [d.title for d in corpus.documents] == ["France", "Paris"]
    assert [q["id"] for q in corpus.questions["test"]] == ["q1"]
    assert [d.title for d in read_corpus(tmp_path / "d" / "raw").documents] == ["France", "Paris"]


def test_current_document_file_wins_over_the_older_one(tmp_path: Path) -> None:
    _json(tmp_path / "raw" / "documents.json", {"New": "current layout"})
    _json(tmp_path / "raw" / "dataset_corpus.json", {"Old": "older layout"})
    assert [d.title for d in read_corpus(tmp_path).documents] == ["New"]


def test_a_directory_without_either_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "empty" / "raw").mkdir(parents=True)
    with pytest.raises(CorpusError, match=r"neither raw/documents\.json nor raw/dataset_corpus\.json"):
        read_corpus(tmp_path / "empty")
    _write(tmp_path / "built" / "processed" / "stage1" / "nodes.csv", "name,type,attributes\n")
    with pytest.raises(CorpusError, match=r"pre-built graph: hoprag index --graph .*processed/stage1"):
        read_corpus(tmp_path / "built")


def test_supporting_documents_and_supporting_facts(tmp_path: Path) -> None:
    _json(tmp_path / "raw" / "documents.json", {"France": "France.", "Paris": "Paris."})
    _json(
        tmp_path / "raw" / "test.json",
        [
            {  # GFM-RAG's current field, plus extras
                "id": "new",
                "question": "What is the capital of France?",
                "answer": "Paris",
                "answer_aliases": ["City of Paris"],
                "supporting_documents": ["France", "Paris", "France"],
                "type": "bridge",
                "hops": 2,
                "question_decomposition": [{"q": "x"}],
                "plan": [{"step": "Which country has the capital Paris?", "answer": "France", "ref": None}],
            },
            {"id": "old", "question": "Q?", "supporting_facts": [["Paris", 0], ["Paris", 3]]},
            {  # a processed stage1 question: seeds and targets by node type
                "id": "stage1",
                "question": "Q?",
                "start_nodes": {"entity": ["capital"]},
                "target_nodes": {"document": ["France"], "entity": ["capital"]},
            },
        ],
    )
    new, old, stage1 = read_corpus(tmp_path).questions["test"]
    assert new["supporting_facts"] == ["France", "Paris"]
    assert new["answer_aliases"] == ["City of Paris"]
    # a gold plan is also the question's decomposition (what step_recall scores a planner against)
    assert new["metadata"] == {
        "type": "bridge",
        "hops": 2,
        "decomposition": [{"question": "Which country has the capital Paris?", "answer": "France"}],
    }
    assert "start_nodes" not in new and "plan" not in old
    assert new["plan"][0]["answer"] == "France"  # a gold search plan is kept (distillation's planner tasks)
    assert old["supporting_facts"] == ["Paris"]
    assert stage1["supporting_facts"] == ["France"]  # from target_nodes when no supporting field
    assert stage1["start_nodes"] == {"entity": ["capital"]}
    assert stage1["metadata"] == {}


# -- pre-built stage1 graphs -------------------------------------------------------------------

NODES = """name,type,attributes
France,document,"{}"
Paris,document,"{'content': 'ignored: raw/documents.json has the text'}"
capital,entity,"{}"
"Barack Obama","entity","{}"
"White House","entity","{'location': 'Washington, D.C.'}"
"Obama Biography","document","{'title': 'The Life of Barack Obama', 'published_year': 2020}"
Summary_node_1,summary,"{""summary"": ""a summary""}"
"""
RELATIONS = """name,attributes
is_mentioned_in,"{'description': 'An entity is mentioned in the document'}"
lived_in,"{'description': 'A person has a habitual presence in a specific location.'}"
capital of,{}
equivalent,{}
"""
EDGES = """source,relation,target,attributes
capital,is_mentioned_in,France,"{}"
capital,is_mentioned_in,Paris,"{}"
"Barack Obama","lived_in","White House","{'start_year': 2009, 'end_year': 2017}"
"Barack Obama",is_mentioned_in,"Obama Biography",{}
"White House",is_mentioned_in,"Obama Biography",{}
"Barack Obama",capital of,capital,{}
capital,equivalent,"White House",{}
Summary_node_1,is_mentioned_in,France,{}
France,is_mentioned_in,Paris,{}
"""


def _stage1(root: Path, nodes: str = NODES, relations: str = RELATIONS, edges: str = EDGES) -> Path:
    _json(
        root / "raw" / "documents.json",
        {"France": "France is a country; Paris is its capital.", "Paris": "Paris is the capital of France."},
    )
    _json(
        root / "raw" / "train.json",
        [
            {
                "id": "t1",
                "question": "Where did Barack Obama live?",
                "supporting_documents": ["Obama Biography"],
            }
        ],
    )
    stage1 = root / "processed" / "stage1"
    _write(stage1 / "nodes.csv", nodes)
    _write(stage1 / "relations.csv", relations)
    _write(stage1 / "edges.csv", edges)
    _json(
        stage1 / "test.json",
        [
            {
                "id": "toy-1",
                "question": "What is the capital of France?",
                "answer": "Paris",
                "answer_aliases": ["City of Paris"],
                "supporting_documents": ["France", "Paris"],
                "start_nodes": {"entity": ["capital", "not in the graph"]},
                "target_nodes": {"document": ["France", "Paris"]},
                "level": "easy",
            }
        ],
    )
    return stage1


def test_stage1_graph_maps_onto_documents_triples_and_links(tmp_path: Path) -> None:
    graph = read_stage1(_stage1(tmp_path / "toy"))
    titles = [d.title for d in graph.documents]
    assert titles == ["France", "Paris", "Obama Biography"]
    assert graph.documents[1].text == "Paris is the capital of France."  # raw wins over node content
    doc = {t: i for i, t in enumerate(titles)}
    # provenance inferred: the documents mentioning both ends
    assert graph.doc_triples[doc["Obama Biography"]] == [("Barack Obama", "lived_in", "White House")]
    assert graph.unattributed_triples == [("Barack Obama", "capital of", "capital")]
    assert sorted(graph.doc_entities[doc["Obama Biography"]]) == ["Barack Obama", "White House"]
    assert graph.doc_entities[doc["France"]] == ["capital"]
    assert graph.equivalent_pairs == {("capital", "white house")}
    assert graph.problems["skipped_summary_nodes"] == 1
    assert graph.problems["edges_of_skipped_nodes"] == 1
    assert graph.problems["document_document_edges"] == 1
    assert graph.problems["documents_without_text"] == 1
    # questions: the stage1 file for test, the raw one for train
    assert graph.questions["test"][0]["start_nodes"]["entity"] == ["capital", "not in the graph"]
    assert graph.questions["train"][0]["supporting_facts"] == ["Obama Biography"]
    # equivalent edges are ordinary triples when synonym edges are off
    plain = read_stage1(tmp_path / "toy", synonym_edges=False)
    assert ("capital", "equivalent", "White House") in plain.unattributed_triples


def test_index_from_stage1_uses_start_nodes_as_seeds(tmp_path: Path, embedder) -> None:
    out = tmp_path / "index"
    graph = read_stage1(_stage1(tmp_path / "toy") / "..")  # processed/ works too
    summary = build_index_from_graph(out, IndexConfig(), graph, embedder=embedder)
    index = KGIndex(out)
    assert index.entity_names == ["barack obama", "capital", "white house"]
    assert index.entity_surface[0] == "Barack Obama"
    assert set(index.relation_names) == {"capital of", "equivalent", "lived_in"}
    triples = {index.triple(t): int(index.kind[t]) for t in range(index.num_triples)}
    assert triples[("barack obama", "lived_in", "white house")] == 0
    assert triples[("capital", "equivalent", "white house")] == KIND_EQUIVALENT
    tid = next(t for t in range(index.num_triples) if index.triple(t)[1] == "lived_in")
    assert index.triple_doc_ids[tid] == [2]
    q = {r["id"]: r for r in index.questions.to_pylist()}
    assert q["toy-1"]["question_entities"] == ["capital"]
    assert q["toy-1"]["link_sources"] == ["start_nodes"]
    assert q["toy-1"]["supporting_docs"] == ["France", "Paris"]
    assert q["toy-1"]["supporting_entities"] == ["capital"]
    assert json.loads(q["toy-1"]["metadata"]) == {"level": "easy"}
    assert q["t1"]["link_sources"] and "start_nodes" not in q["t1"]["link_sources"]  # linked, no LLM
    assert summary.input_problems["unknown_start_nodes"] == 1
    assert index.manifest["llm_model_id"] is None
    assert index.manifest["source"]["format"] == "gfm-rag-stage1"
    assert index.manifest["config"]["questions"]["use_llm_ner"] is False
    assert "pre-built graph" in summary.render()


def test_stage1_with_uid_column(tmp_path: Path) -> None:
    stage1 = tmp_path / "processed" / "stage1"
    _write(stage1 / "nodes.csv", "uid,name,type,attributes\ne1,Paris,entity,{}\nd1,Paris,document,{}\n")
    _write(stage1 / "relations.csv", "name,attributes\nis_mentioned_in,{}\n")
    _write(stage1 / "edges.csv", "source,relation,target,attributes\ne1,is_mentioned_in,d1,{}\n")
    _json(stage1 / "test.json", [{"id": "q", "question": "Q?", "start_nodes": {"entity": ["e1"]}}])
    graph = read_stage1(stage1)
    assert [d.title for d in graph.documents] == ["Paris"] and graph.doc_entities == [["Paris"]]
    assert graph.questions["test"][0]["start_nodes"] == {"entity": ["Paris"]}


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("nodes.csv", "name,attributes\nX,{}\n", r"nodes\.csv:1: missing column\(s\) type"),
        ("edges.csv", "source,relation,attributes\nX,r,{}\n", r"edges\.csv:1: missing column\(s\) target"),
        (
            "edges.csv",
            'source,relation,target,attributes\ncapital,is_mentioned_in,France,{}\n"Nowhere",lived_in,capital,{}\n',
            r"edges\.csv:3: source 'Nowhere' is not a node of nodes\.csv",
        ),
        (
            "edges.csv",
            "source,relation,target,attributes\ncapital,is_mentioned_in,Atlantis,{}\n",
            r"edges\.csv:2: target 'Atlantis' is not a node",
        ),
        (
            "edges.csv",
            "source,relation,target,attributes\ncapital,rules,France,{}\n",
            r"edges\.csv:2: relation 'rules' is not in relations\.csv",
        ),
        (
            "edges.csv",
            "source,relation,target,attributes\ncapital,is_mentioned_in,France,{oops\n",
            r"edges\.csv:2: attributes '\{oops' are neither JSON nor a Python literal",
        ),
        (
            "edges.csv",
            "source,relation,target,attributes\ncapital,is_mentioned_in,France\n",
            r"edges\.csv:2: 4 fields expected",
        ),
        (
            "nodes.csv",
            "name,type,attributes\ncapital,entity,{}\nFrance,document,{}\ncapital,entity,{}\n",
            r"nodes\.csv:4: node 'capital' is already on line 2",
        ),
        ("relations.csv", "attributes\n{}\n", r"relations\.csv:1: missing column name"),
    ],
)
def test_malformed_csvs_name_file_and_line(tmp_path: Path, file: str, content: str, message: str) -> None:
    stage1 = _stage1(tmp_path / "bad")
    _write(stage1 / file, content)
    with pytest.raises(CorpusError, match=message):
        read_stage1(stage1)


def test_missing_graph_files(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r"no nodes\.csv"):
        read_stage1(tmp_path)
    _write(tmp_path / "nodes.csv", "name,type,attributes\n")
    with pytest.raises(CorpusError, match=r"relations\.csv does not exist"):
        read_stage1(tmp_path)


# -- export and the round trip -----------------------------------------------------------------

DOCS = [
    Document("Mira Castell", "Mira Castell was born in Dornwick. Mira Castell starred in The Ember Road."),
    Document("The Ember Road", "The Ember Road was directed by Tavin Orlo."),
    Document("Ember Road (film)", "Ember Road, a film by Tavin Orlo, is set in Halvaria."),
    Document(
        "halvaria", "Halvaria is a country; Dornwick is a harbour city in Halvaria."
    ),  # title = entity name
    Document("Empty", ""),
]
TRIPLES = [
    [("Mira Castell", "born in", "Dornwick"), ("Mira Castell", "starred in", "The Ember Road")],
    [("The Ember Road", "directed by", "Tavin Orlo")],
    [("Ember Road", "directed by", "Tavin Orlo"), ("Ember Road", "set in", "Halvaria")],
    [("Dornwick", "city in", "Halvaria"), ("Mira Castell", "born in", "Dornwick")],
    [],
]
NER = [["Halvaria"], [], [], ["Harbour"], []]
QUESTIONS = [
    {
        "split": "test",
        "id": "q1",
        "question": "Who directed the film Mira Castell starred in?",
        "answer": "Tavin Orlo",
        "answer_aliases": ["T. Orlo"],
        "supporting_facts": ["Mira Castell", "The Ember Road", "Lost Document"],
        "metadata": {"type": "bridge", "hops": 2},
    },
    {
        "split": "train",
        "id": "q2",
        "question": "Which country is Dornwick in?",
        "answer": "Halvaria",
        "answer_aliases": [],
        "supporting_facts": ["halvaria"],
        "metadata": {},
    },
]


def _source_index(root: Path, embedder) -> Path:
    """An index as an LLM build makes it: triples with provenance, NER-only entities, synonym
    edges, linked questions."""
    tables = build_tables(DOCS, TRIPLES, NER, embedder, SynonymConfig())
    title_to_doc = {d.title: i for i, d in enumerate(DOCS)}
    doc_to_entities: dict[int, list[int]] = {}
    for d, e in zip(tables.doc_entity_doc.tolist(), tables.doc_entity_entity.tolist(), strict=True):
        doc_to_entities.setdefault(d, []).append(e)
    rows, _ = link_questions(
        QUESTIONS,
        [[] for _ in QUESTIONS],
        tables.entity_names,
        tables.entity_embeddings,
        title_to_doc,
        doc_to_entities,
        embedder,
        QuestionLinkingConfig(use_llm_ner=False),
    )
    for row, q in zip(rows, QUESTIONS, strict=True):
        row.update(split=q["split"], supporting_facts=q["supporting_facts"], metadata=q["metadata"])
    tables.questions = questions_table(rows)
    write_snapshot(root, tables, {"counts": {}})
    return root


def _contents(index: KGIndex) -> dict[str, Any]:
    titles = index.documents.column("title").to_pylist()
    links = index.doc_entities
    questions = []
    for r in index.questions.to_pylist():
        questions.append(
            {
                k: r[k]
                for k in (
                    "split",
                    "id",
                    "question",
                    "answer",
                    "answer_aliases",
                    "question_entities",
                    "supporting_facts",
                    "supporting_docs",
                    "supporting_entities",
                    "answer_in_supporting_entities",
                )
            }
            | {"metadata": json.loads(r["metadata"])}
        )
    return {
        "documents": dict(zip(titles, index.documents.column("text").to_pylist(), strict=True)),
        "entities": list(zip(index.entity_names, index.entity_surface, strict=True)),
        "relations": sorted(index.relation_names),
        "triples": {
            (index.triple(t), int(index.kind[t]), tuple(sorted(titles[d] for d in index.triple_doc_ids[t])))
            for t in range(index.num_triples)
        },
        "links": {
            (titles[d], index.entity_names[e])
            for d, e in zip(
                links.column("doc_id").to_pylist(), links.column("entity_id").to_pylist(), strict=True
            )
        },
        "questions": sorted(questions, key=lambda q: q["id"]),
    }


def test_export_then_index_graph_round_trips(tmp_path: Path, embedder, monkeypatch, capsys) -> None:
    from hoprag_cli import main

    monkeypatch.setenv("HOPRAG_CACHE_DIR", str(tmp_path / "cache"))
    source = KGIndex(_source_index(tmp_path / "source", embedder))
    before = _contents(source)
    assert any(kind == KIND_EQUIVALENT for _, kind, _ in before["triples"])  # synonym edges are exercised
    assert all(q["question_entities"] for q in before["questions"])

    data = tmp_path / "gfm"
    assert main(["export", "gfm-rag", str(source.path), str(data)]) == 0
    assert "5 documents" in capsys.readouterr().out
    stage1 = data / "processed" / "stage1"
    # GFM-RAG's own reading of the files: a uid column (the "halvaria" title clashes with an
    # entity name), attributes as Python literals, edges naming nodes and relations that exist.
    with (stage1 / "nodes.csv").open(newline="", encoding="utf-8") as fh:
        nodes = list(csv.DictReader(fh))
    uids = {n["uid"] for n in nodes}
    assert len(uids) == len(nodes) and "document:halvaria" in uids
    assert all(isinstance(ast.literal_eval(n["attributes"]), dict) for n in nodes)
    with (stage1 / "edges.csv").open(newline="", encoding="utf-8") as fh:
        edges = list(csv.DictReader(fh))
    with (stage1 / "relations.csv").open(newline="", encoding="utf-8") as fh:
        relations = {r["name"] for r in csv.DictReader(fh)}
    assert all(e["source"] in uids and e["target"] in uids and e["relation"] in relations for e in edges)
    test = json.loads((stage1 / "test.json").read_text())
    assert set(test[0]) >= {"id", "question", "answer", "supporting_documents", "start_nodes", "target_nodes"}
    assert test[0]["type"] == "bridge"  # metadata fields are written as extra fields
    assert json.loads((data / "raw" / "documents.json").read_text())["halvaria"].startswith("Halvaria")
    assert (data / "raw" / "train.json").is_file()

    assert main(["index", "--graph", str(stage1), "--out", str(tmp_path / "again")]) == 0
    after = _contents(KGIndex(tmp_path / "again"))
    for key in before:
        assert after[key] == before[key], key

    # The raw half of the export is a corpus the LLM path reads (documents.json + supporting_documents).
    corpus = read_corpus(data)
    assert {d.title for d in corpus.documents} == set(before["documents"])
    assert corpus.questions["test"][0]["supporting_facts"] == [
        "Mira Castell",
        "The Ember Road",
        "Lost Document",
    ]


def test_index_graph_refuses_corpus_flags_and_graph_indexes_refuse_add(
    tmp_path: Path, embedder, monkeypatch
) -> None:
    from hoprag.kg.store import KGIndexError
    from hoprag_cli import main
    from indexing.pipeline import build_index

    stage1 = _stage1(tmp_path / "toy")
    args = ["index", "--graph", str(stage1), "--out", str(tmp_path / "ix")]
    assert main([*args, "--corpus", str(tmp_path / "toy")]) == 2
    assert main(["index", "--graph", str(tmp_path / "nothing"), "--out", str(tmp_path / "ix")]) == 2
    build_index_from_graph(tmp_path / "ix", IndexConfig(), read_stage1(stage1), embedder=embedder)
    with pytest.raises(KGIndexError, match="pre-built graph"):
        build_index(tmp_path / "ix", IndexConfig(), delete_titles=["France"])


# -- the evaluation registry names GFM-RAG-layout directories --------------------------------


def test_benchmarks_can_name_a_gfm_rag_directory(tmp_path: Path, embedder) -> None:
    from evaluation.config import BenchmarkSpec, resolve_benchmark
    from evaluation.questions import load_questions

    data = tmp_path / "hotpotqa_test"
    stage1 = _stage1(data)
    spec = BenchmarkSpec.model_validate({"name": "hotpotqa", "data": str(data)})
    assert spec.index == data / "processed" / "hoprag-index"
    assert BenchmarkSpec(name="x", data=data, index=tmp_path / "elsewhere").index == tmp_path / "elsewhere"
    with pytest.raises(ValueError, match="index"):
        BenchmarkSpec.model_validate({"name": "neither"})
    resolved = resolve_benchmark(str(data))
    assert (resolved.name, resolved.data, resolved.index) == ("hotpotqa_test", data, spec.index)
    # not built yet: the error gives the command that builds it
    with pytest.raises(ValueError, match=rf"hoprag index --graph {stage1} --out {spec.index}"):
        load_questions(spec)
    build_index_from_graph(spec.index, IndexConfig(), read_stage1(stage1), embedder=embedder)
    rows, report = load_questions(spec)
    assert [r["id"] for r in rows] == ["toy-1"] and report.questions == 1
    assert resolve_benchmark(str(spec.index)).data is None  # an index directory is an index


def test_eval_retrieval_takes_a_gfm_rag_directory(tmp_path: Path, embedder, monkeypatch, capsys) -> None:
    from hoprag_cli import main

    monkeypatch.setenv("HOPRAG_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "hotpotqa_test"
    stage1 = _stage1(data)
    index = data / "processed" / "hoprag-index"
    # no index yet: a clear error with the command that builds it
    assert main(["eval", "retrieval", "--index", str(data), "--retriever", "dense"]) == 2
    assert f"hoprag index --graph {stage1} --out {index}" in capsys.readouterr().err
    build_index_from_graph(index, IndexConfig(), read_stage1(stage1), embedder=embedder)
    assert main(["eval", "retrieval", "--index", str(data), "--retriever", "dense", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["n"] == 1 and result["errors"] == 0


def test_export_into_an_earlier_export_leaves_no_stale_questions(tmp_path: Path, embedder) -> None:
    import pyarrow.compute as pc

    from indexing.gfmrag import export_gfm_rag

    source = KGIndex(_source_index(tmp_path / "source", embedder))
    out = tmp_path / "gfm"
    assert set(export_gfm_rag(source, out)["questions"]) == {"train", "test"}
    # the same OUT again, from an index that only has test questions
    questions = source.questions
    source.questions = questions.filter(pc.equal(questions.column("split"), "test"))
    assert set(export_gfm_rag(source, out)["questions"]) == {"test"}
    for directory in (out / "raw", out / "processed" / "stage1"):
        assert (directory / "test.json").is_file() and not (directory / "train.json").exists()
