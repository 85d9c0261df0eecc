"""``hoprag demo``: the main job on embedded defaults (no GPU, no network, no API key).

Index the packaged sample corpus with the embedded Gemma model through Ray Data, fine-tune the GLM
retriever shipped with hoprag (``packaged-glm``, a LoRA MiniLM GLM) with Ray Train + DeepSpeed on
CPU, then serve both
behind the QA route (Ray Serve) and answer sample questions over HTTP in both modes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hoprag_cli.common import add_config_args

if TYPE_CHECKING:
    from hoprag.llm.factory import LLMBackendConfig
    from training.config import TrainConfig

from hoprag.paths import SAMPLE_CORPUS
from training.recipes import FINE_TUNE_STEPS

# hoprag train's default recipe (training/recipes.py)
DEMO_TRAIN_STEPS = FINE_TUNE_STEPS


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("demo", help="run the pipeline on the packaged sample corpus with embedded models")
    d.add_argument("--workdir", type=Path, default=Path("runs/demo"), help="where the demo writes its index")
    d.add_argument("--fresh", action="store_true", help="discard a previous demo index (and its cache) first")
    d.add_argument(
        "--train-steps", type=int, default=DEMO_TRAIN_STEPS, help="GLM training steps (0 skips training)"
    )
    d.add_argument("--no-serve", action="store_true", help="stop after training (skip serving and answering)")
    d.add_argument(
        "--from-minilm",
        action="store_true",
        help="train the GLM from the pretrained MiniLM instead of fine-tuning the general GLM shipped with "
        "hoprag (packaged-glm)",
    )
    add_config_args(d)
    d.set_defaults(handler=_run, run_dir_arg="workdir")


def _run(args: argparse.Namespace) -> int:
    return run_demo(
        args.workdir,
        fresh=args.fresh,
        config_path=args.config,
        overrides=args.overrides,
        train_steps=args.train_steps,
        serve=not args.no_serve,
        from_minilm=args.from_minilm,
    )


def run_demo(
    workdir: Path,
    fresh: bool = False,
    config_path: Path | None = None,
    overrides: Sequence[str] = (),
    train_steps: int = DEMO_TRAIN_STEPS,
    serve: bool = True,
    from_minilm: bool = False,
) -> int:
    """Index the sample corpus, train the MiniLM GLM, compare it with the dense baseline (and the two
    fused), serve, answer."""
    from hoprag.config import load_config
    from hoprag.kg.index import KGIndex
    from hoprag.kg.stats import index_stats, render_stats
    from indexing.config import IndexConfig
    from indexing.corpus import read_corpus
    from indexing.pipeline import build_index

    started = time.perf_counter()
    index_dir = workdir / "index"
    if fresh and index_dir.exists():
        shutil.rmtree(index_dir)
    config = load_config(IndexConfig, config_path, overrides)
    corpus = read_corpus(SAMPLE_CORPUS)
    print(
        f"[demo] 1/3 indexing {len(corpus.documents)} sample documents and "
        f"{sum(len(q) for q in corpus.questions.values())} questions with {config.llm.backend} LLM "
        f"(Ray Data, batch {config.extraction.batch_size}) → {index_dir}\n       LLM: {_describe_llm(config.llm)}",
        flush=True,
    )
    summary = build_index(index_dir, config, corpus=corpus)
    print("\n== build summary ==")
    print(summary.render())
    index = KGIndex(index_dir)
    print("\n== KG statistics ==")
    print(render_stats(index_stats(index)))
    print("\n== what the LLM extracted from three documents ==")
    titles = index.documents.column("title").to_pylist()
    texts = index.documents.column("text").to_pylist()
    by_doc: dict[int, list[int]] = {}
    for tid, docs in enumerate(index.triple_doc_ids):
        for d in docs:
            by_doc.setdefault(d, []).append(tid)
    for d in sorted(by_doc)[:3]:
        print(f"  {titles[d]}: {texts[d]}")
        for tid in by_doc[d]:
            h, r, t = index.triple(tid)
            print(f"      ({h} | {r} | {t})")
    if index.questions is not None and index.questions.num_rows:
        print("\n== a few linked questions ==")
        for row in index.questions.slice(0, 3).to_pylist():
            print(
                f"  Q: {row['question']}\n     entities: {row['question_entities']}  answer: {row['answer']}"
            )
    # one run directory per starting point: a run resumes only from where it started
    run_dir = workdir / ("glm-from-minilm" if from_minilm else "glm")
    if train_steps > 0:
        _train_and_compare(index_dir, run_dir, train_steps, from_minilm=from_minilm)
    if serve:
        retriever = run_dir if (run_dir / "retriever").is_dir() else None
        _serve_and_answer(index_dir, retriever, index)
    print(
        f"\n[demo] done in {time.perf_counter() - started:.1f}s; inspect with: hoprag index stats {index_dir}"
    )
    return 0


def _forget_run_of_other_weights(run_dir: Path, init: str) -> None:
    """Discard the demo's own fine-tuning run when it started from other weights than the shipped
    GLM's now (hoprag upgraded since): resuming it would be refused (training/warm_start.py), and
    the demo's run is the demo's to redo. A user's own runs are never touched this way."""
    from hoprag.glm.artifact import WEIGHTS, read_retriever_meta
    from training.warm_start import INIT_FILE, weights_sha256

    started = run_dir / INIT_FILE
    if not started.is_file():
        return
    directory, _ = read_retriever_meta(init)
    if json.loads(started.read_text()).get("weights_sha256") != weights_sha256(directory / WEIGHTS):
        print(
            f"[demo] the shipped GLM changed since {run_dir} was fine-tuned: fine-tuning it again", flush=True
        )
        shutil.rmtree(run_dir)


def _describe_llm(config: LLMBackendConfig) -> str:
    """The LLM's model id and, for a distilled student, the tasks it answers with student prompts."""
    from hoprag.llm.factory import LazyLLM, expected_model_id

    tasks = sorted(LazyLLM(config).student_tasks)
    if not tasks:  # llama.cpp prompts a model with a chat template in chat form
        return expected_model_id(config) + ("" if config.backend == "llamacpp" else " (few-shot prompts)")
    return (
        f"{expected_model_id(config)}: the distilled student (student prompts for {', '.join(tasks)}; "
        "--set llm.embedded.adapter=null selects the base model with few-shot prompts)"
    )


def demo_train_config(steps: int, init: str | None) -> TrainConfig:
    """What the demo trains: with ``init`` (the shipped GLM) ``hoprag train``'s default recipe
    (:mod:`training.recipes`), the same run a user gets from ``hoprag train --index IDX --out RUN``;
    without, the MiniLM GLM from its pretrained encoder with the CPU recipes' sampler and ranker
    (training/configs/glm-minilm-cpu.yaml)."""
    from training.config import TrainConfig
    from training.recipes import default_recipe

    recipe = {**default_recipe(steps), "init": init}
    if not init:
        recipe |= {
            "backbone": {"model": "minilm"},
            "glm": {"sampler": {"max_triplets": 100}, "doc_ranker": "score_idf"},
        }
    return TrainConfig.model_validate(recipe)


def _train_and_compare(index_dir: Path, run_dir: Path, steps: int, from_minilm: bool = False) -> None:
    """Fine-tune the general GLM shipped with hoprag (``packaged-glm``: a LoRA MiniLM GLM trained on
    a larger generated benchmark; with ``from_minilm`` or where it is missing, train the MiniLM GLM
    from the pretrained encoder) for ``steps`` optimizer steps on 2 CPU workers, then print
    test-split recall of dense, the shipped GLM as it is, the fine-tuned GLM, and the two fused."""
    from evaluation.retrieval import evaluate_retrieval
    from hoprag.glm.artifact import PACKAGED_GLM_NAME, RetrieverLoadError, read_retriever_meta
    from hoprag.kg.index import KGIndex
    from hoprag.retrieval.loading import load_retriever
    from training.trainer import run_training

    init = None
    if not from_minilm:
        try:
            read_retriever_meta(PACKAGED_GLM_NAME)
            init = PACKAGED_GLM_NAME
        except RetrieverLoadError as exc:
            print(f"[demo] no shipped GLM to fine-tune ({exc}); training from MiniLM", flush=True)
    if init:
        _forget_run_of_other_weights(run_dir, PACKAGED_GLM_NAME)
    config = demo_train_config(steps, init)
    start = (
        "fine-tuning the shipped general GLM (packaged-glm)"
        if init
        else "training the GLM retriever (pretrained MiniLM backbone)"
    )
    print(
        f"\n[demo] 2/3 {start} for {steps} steps (Ray Train, "
        f"{config.run.num_workers} CPU workers, DeepSpeed ZeRO-{config.deepspeed.zero_stage}) → {run_dir}",
        flush=True,
    )
    t0 = time.perf_counter()
    metrics = run_training(index_dir, run_dir, config)
    print(
        f"trained in {time.perf_counter() - t0:.0f}s: loss {metrics.get('loss', float('nan')):.3f}, validation "
        f"recall@2 {metrics.get('val_recall@2', float('nan')):.3f}, recall@5 {metrics.get('val_recall@5', float('nan')):.3f}; "
        f"exported with the {metrics.get('exported_ranker')} document ranker (best on validation)"
    )
    index = KGIndex(index_dir)
    rows = [("dense (MiniLM sentence embeddings)", "dense")]
    if init:
        rows.append(("shipped GLM, as shipped (zero-shot)", init))
    rows += [
        ("GLM, fine-tuned here" if init else "GLM", str(run_dir)),
        ("GLM + dense, fused (RRF)", f"{run_dir}+dense"),
    ]
    print("\n== test-split document recall ==")
    for label, spec in rows:
        r = evaluate_retrieval(index, load_retriever(spec, index))
        print(f"  {label:<36} recall@2 {r['recall@2']:.3f}  recall@5 {r['recall@5']:.3f}  (n={r['n']})")
    print(f"retriever exported to {run_dir / 'retriever'}")


def _serve_and_answer(index_dir: Path, retriever: Path | None, index: object, questions: int = 2) -> None:
    """Deploy the QA app (Ray Serve) and answer sample test questions through ``POST /v1/qa``."""
    from hoprag.ports import pick_free_port
    from serving.client import QAClient
    from serving.run import start_app, stop_app, wait_until_ready
    from serving.settings import QAAppSettings

    port = pick_free_port()  # not an ephemeral port, which a connection may take first
    settings = QAAppSettings(index=str(index_dir), retriever=str(retriever) if retriever else "dense")
    print(
        f"\n[demo] 3/3 serving the QA app (Ray Serve: LLM, Retriever {settings.retriever}, QA, ingress) "
        f"on http://127.0.0.1:{port}\n       answering LLM: {_describe_llm(settings.llm)}",
        flush=True,
    )
    t0 = time.perf_counter()
    try:
        base = start_app(settings, port=port)
        waited = wait_until_ready(base)
        print(
            f"ready in {time.perf_counter() - t0:.0f}s (loading {waited:.0f}s); asking over HTTP:", flush=True
        )
        client = QAClient(base)
        rows = [r for r in index.questions.to_pylist() if r["split"] == "test"][:questions]  # type: ignore[attr-defined]
        for row in rows:
            print(f"\n  Q: {row['question']}   (gold: {row['answer']})")
            for mode in ("retrieve", "plan"):
                out = client.ask(row["question"], mode=mode, top_k=3)
                docs = ", ".join(d["title"] for d in out["documents"])
                print(
                    f"    {mode:<8} A: {out['answer']}  [{out['llm_calls']} LLM calls, {out['timings']['total']:.1f}s]"
                    f"  documents: {docs}",
                    flush=True,
                )
        print(
            f"\n  serve it yourself: hoprag serve --index {index_dir} --retriever {settings.retriever}\n"
            "  then: hoprag ask --url http://127.0.0.1:8000 --mode plan '...'  (OpenAPI docs at /docs)"
        )
    finally:
        stop_app()
