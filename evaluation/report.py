"""Reports from stored per-question results: ``summary.json``, ``report.md`` and PNG plots.

``hoprag eval report EVAL_DIR`` rebuilds all of it without re-running anything. Means come with
95% bootstrap intervals (questions resampled); systems are compared pairwise on the questions both
scored: the mean difference with its paired-bootstrap interval, and a paired t-test p-value,
Holm–Bonferroni-corrected over all comparisons of the evaluation (every benchmark, metric and pair
of systems). Pairs with identical per-question scores (one retriever under two pipelines) are not
comparisons and are left out of the family.
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

from evaluation.results import error_counts, read_pair_results
from evaluation.stats import bootstrap_ci, holm_bonferroni, paired_bootstrap, paired_t_test

METRIC_ORDER = [
    "recall@1",
    "recall@2",
    "recall@5",
    "recall@10",
    "entity_recall@20",
    "em",
    "f1",
    "step_recall",
    "step_evidence_recall",
    "judge",
    "context_relevance",
    "faithfulness",
]


def _metric_names(records: list[dict[str, Any]]) -> list[str]:
    seen = {m for r in records for m in r.get("metrics", {})}
    return [m for m in METRIC_ORDER if m in seen] + sorted(seen - set(METRIC_ORDER))


def _invalid_judgements(records: list[dict[str, Any]]) -> dict[str, int]:
    """Unreadable judge outputs per metric (results from before per-metric lists flagged ``judge_invalid``)."""
    counts: Counter[str] = Counter()
    for record in records:
        counts.update(record.get("invalid_judgements") or (["judge"] if record.get("judge_invalid") else []))
    return dict(counts)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"


def summarize(out: Path, meta: dict[str, Any], resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The summary dict (also written as ``summary.json``)."""
    results = []
    comparisons = []
    for bench in meta["benchmarks"]:
        per_system = {s["name"]: read_pair_results(out, bench, s["name"]) for s in meta["systems"]}
        for name, records in per_system.items():
            rows = [records[q] for q in sorted(records)]  # a fixed order: resampling is reproducible
            ok = [r for r in rows if not r.get("error")]
            metrics, ci = {}, {}
            for m in _metric_names(ok):
                values = [r["metrics"][m] for r in ok if m in r["metrics"]]
                mean, low, high = bootstrap_ci(values, resamples, seed)
                metrics[m] = round(mean, 4)
                ci[m] = round((high - low) / 2, 4)
            costs = {
                k: round(sum(r.get(k, 0) for r in ok) / len(ok), 2)
                for k in ("llm_calls", "prompt_tokens")
                if ok and any(k in r for r in ok)
            }
            results.append(
                {
                    "benchmark": bench,
                    "system": name,
                    "n": len(ok),
                    "errors": error_counts(rows),
                    "invalid_judgements": _invalid_judgements(ok),
                    "metrics": metrics,
                    "ci95_half_width": ci,
                    **({"cost_per_question": costs} if costs else {}),
                }
            )
        names = list(per_system)
        for m in METRIC_ORDER:
            pairs = []
            for a, b in itertools.combinations(names, 2):
                ra, rb = per_system[a], per_system[b]
                common = sorted(
                    q
                    for q in set(ra) & set(rb)
                    if m in ra[q].get("metrics", {}) and m in rb[q].get("metrics", {})
                )
                if len(common) < 2:
                    continue
                xa = [ra[q]["metrics"][m] for q in common]
                xb = [rb[q]["metrics"][m] for q in common]
                if xa == xb:  # the same scores question by question (e.g. one retriever, two pipelines)
                    continue
                test = paired_bootstrap(xa, xb, resamples, seed)
                test["p"] = paired_t_test(xa, xb)
                pairs.append(
                    {
                        "benchmark": bench,
                        "metric": m,
                        "a": a,
                        "b": b,
                        "n": len(common),
                        **{k: round(v, 4) for k, v in test.items()},
                    }
                )
            comparisons.extend(pairs)
    # One family: every comparison of the evaluation (all benchmarks, metrics and system pairs).
    for pair, adjusted in zip(comparisons, holm_bonferroni([p["p"] for p in comparisons]), strict=True):
        pair["p_holm"] = round(adjusted, 4)
        pair["significant"] = adjusted < 0.05
    return {
        "results": results,
        "comparisons": comparisons,
        "breakdowns": _breakdowns(out, meta),
        "analysis": _analysis(out, meta),
        "inputs": {b: v["input"] for b, v in meta["benchmarks"].items()},
    }


def _analysis(out: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """GLM-RAG section 6 per benchmark and entity-scoring system: mean semantic similarity
    (question vs top retrieved entities) and mean hop distance of those entities from the seeds."""
    result: dict[str, Any] = {}
    for bench in meta["benchmarks"]:
        for s in meta["systems"]:
            records = read_pair_results(out, bench, s["name"]).values()
            sims = [
                r["analysis"]["retrieved_similarity"]
                for r in records
                if (r.get("analysis") or {}).get("retrieved_similarity") is not None
            ]
            hops = [
                r["analysis"]["retrieved_hop_distance"]
                for r in records
                if (r.get("analysis") or {}).get("retrieved_hop_distance") is not None
            ]
            if sims or hops:
                result.setdefault(bench, {})[s["name"]] = {
                    "semantic_similarity": round(sum(sims) / len(sims), 4) if sims else None,
                    "hop_distance": round(sum(hops) / len(hops), 4) if hops else None,
                    "n": len(sims),
                }
    return result


# "spelling": the synthetic generator's respelled topic entities (absent elsewhere, so not shown).
BREAKDOWN_KEYS = ("hops", "type", "supporting_docs", "entity_distance", "spelling")
BREAKDOWN_METRICS = ("recall@5", "em", "step_recall", "step_evidence_recall")


def _breakdowns(out: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """benchmark → key (hops, question type, number of supporting documents, ...) → system → metric → value → mean."""
    result: dict[str, Any] = {}
    for bench in meta["benchmarks"]:
        for s in meta["systems"]:
            records = list(read_pair_results(out, bench, s["name"]).values())
            for key in BREAKDOWN_KEYS:
                for metric in BREAKDOWN_METRICS:
                    series = _breakdown(records, key, metric)
                    if series and list(series) != ["None"]:
                        node = result.setdefault(bench, {}).setdefault(key, {}).setdefault(s["name"], {})
                        node[metric] = {k: round(v, 4) for k, v in series.items()}
    return result


def _breakdown(records: list[dict[str, Any]], key: str, metric: str) -> dict[str, float]:
    groups: dict[str, list[float]] = {}
    for r in records:
        if metric not in r.get("metrics", {}):
            continue
        if key == "supporting_docs":
            value = str(len(r.get("supporting_docs") or []))
        elif key in (r.get("analysis") or {}):
            value = str(r["analysis"][key])
        else:
            value = str(r.get("meta", {}).get(key))
        groups.setdefault(value, []).append(r["metrics"][metric])
    return {k: sum(v) / len(v) for k, v in sorted(groups.items(), key=lambda kv: (len(kv[0]), kv[0]))}


def _plots(out: Path, summary: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    benches = list(meta["benchmarks"])
    systems = [s["name"] for s in meta["systems"]]
    for metric in ("recall@2", "recall@5", "em"):
        rows = [r for r in summary["results"] if metric in r["metrics"]]
        if not rows:
            continue
        names = [s for s in systems if any(r["system"] == s for r in rows)]
        fig, ax = plt.subplots(figsize=(1.6 + 1.4 * len(benches) * max(1, len(names)) / 2, 3.2))
        width = 0.8 / len(names)
        for i, s in enumerate(names):
            vals = [
                next((r["metrics"][metric] for r in rows if r["benchmark"] == b and r["system"] == s), 0)
                for b in benches
            ]
            errs = [
                next(
                    (r["ci95_half_width"][metric] for r in rows if r["benchmark"] == b and r["system"] == s),
                    0,
                )
                for b in benches
            ]
            ax.bar([x + i * width for x in range(len(benches))], vals, width, yerr=errs, label=s, capsize=2)
        ax.set_xticks([x + width * (len(names) - 1) / 2 for x in range(len(benches))], benches)
        ax.set_ylabel(metric)
        ax.set_ylim(0, 1)
        ax.legend(fontsize=7)
        fig.tight_layout()
        name = f"{metric.replace('@', '_at_')}_bars.png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        written.append(name)
    for key, label in (("hops", "hops"), ("supporting_docs", "supporting documents")):
        fig, axes = plt.subplots(1, len(benches), figsize=(3.6 * len(benches), 3.0), squeeze=False)
        drew = False
        for ax, bench in zip(axes[0], benches, strict=True):
            for s in systems:
                records = list(read_pair_results(out, bench, s).values())
                series = _breakdown(records, key, "recall@5")
                numeric = {int(k): v for k, v in series.items() if k.isdigit()}  # hops / document counts
                if numeric:
                    ax.plot(list(numeric), list(numeric.values()), marker="o", label=s)
                    drew = True
            ax.set_title(bench, fontsize=9)
            ax.set_xlabel(label)
            ax.set_ylabel("recall@5")
            ax.set_ylim(0, 1)
        if drew:
            axes[0][0].legend(fontsize=7)
            fig.tight_layout()
            name = f"recall_vs_{key}.png"
            fig.savefig(out / name, dpi=110)
            written.append(name)
        plt.close(fig)
    return written


def _markdown(summary: dict[str, Any], meta: dict[str, Any], plots: list[str], command: str | None) -> str:
    benches = list(meta["benchmarks"])
    systems = [s["name"] for s in meta["systems"]]
    lines = ["# Evaluation report", ""]
    if command:
        lines += ["```bash", command, "```", ""]
    lines += [
        "Means over questions with 95% bootstrap half-widths (±). **Bold**: best on that benchmark. "
        "† : differs from the best at p < 0.05 (paired t-test, Holm–Bonferroni over all comparisons).",
        "",
    ]
    if meta.get("judge_prompts"):
        shown = ", ".join(f"{m} (`{v}`)" for m, v in meta["judge_prompts"].items())
        lines += [f"LLM-judged metrics and their prompt versions: {shown}.", ""]
    metrics = [m for m in METRIC_ORDER if any(m in r["metrics"] for r in summary["results"])]
    sig = {
        (c["benchmark"], c["metric"], frozenset((c["a"], c["b"])))
        for c in summary["comparisons"]
        if c["significant"]
    }
    for m in metrics:
        lines += [f"## {m}", "", "| system | " + " | ".join(benches) + " |", "|---|" + "---|" * len(benches)]
        best: dict[str, set[str]] = {}  # ties are all best
        for b in benches:
            vals = {
                r["system"]: r["metrics"][m]
                for r in summary["results"]
                if r["benchmark"] == b and m in r["metrics"]
            }
            top = max(vals.values(), default=None)
            best[b] = {s for s, v in vals.items() if v == top}
        for s in systems:
            cells = []
            for b in benches:
                r = next((r for r in summary["results"] if r["benchmark"] == b and r["system"] == s), None)
                if r is None or m not in r["metrics"]:
                    cells.append("–")
                    continue
                text = f"{r['metrics'][m]:.3f} ± {r['ci95_half_width'][m]:.3f}"
                if s in best[b]:
                    text = f"**{text}**"
                elif any((b, m, frozenset((s, t))) in sig for t in best[b]):
                    text += " †"
                cells.append(text)
            if any(c != "–" for c in cells):
                lines.append(f"| {s} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "## Questions and problems",
        "",
        "| benchmark | system | n | errors | judge outputs that could not be read |",
        "|---|---|---|---|---|",
    ]
    for r in summary["results"]:
        lines.append(
            f"| {r['benchmark']} | {r['system']} | {r['n']} | {_counts(r['errors'])} | "
            f"{_counts(r.get('invalid_judgements') or {})} |"
        )
    lines.append("")
    for b, inp in summary["inputs"].items():
        lines.append(
            f"- {b}: {inp['questions']} questions; {len(inp['duplicate_ids'])} duplicate ids dropped; "
            f"{inp['no_gold_documents']} without gold documents in the corpus (no recall); "
            f"{inp['missing_supporting_docs']} supporting documents missing from the corpus; "
            f"{inp['empty_answers']} empty gold answers (no EM/F1)"
        )
    if summary.get("analysis"):
        lines += [
            "",
            "## Retrieved entities (GLM-RAG section 6)",
            "",
            "Mean cosine similarity between the question and the top-20 retrieved entities (the index's "
            "embedder), and their mean shortest-path distance from the question entities (undirected KG, "
            "cutoff 10).",
            "",
            "| benchmark | system | semantic similarity | hop distance | n |",
            "|---|---|---|---|---|",
        ]
        for bench, per_system in summary["analysis"].items():
            for s, a in per_system.items():
                lines.append(
                    f"| {bench} | {s} | {a['semantic_similarity']} | {a['hop_distance']} | {a['n']} |"
                )
    if summary.get("breakdowns"):
        lines += [
            "",
            "## Breakdowns (GLM-RAG figs. 13–16: by hops, question type, supporting documents, entity-level distance)",
        ]
    for bench, keys in summary.get("breakdowns", {}).items():
        for key, per_system in keys.items():
            for metric in BREAKDOWN_METRICS:
                rows = {s: v[metric] for s, v in per_system.items() if metric in v}
                if not rows:
                    continue
                values = sorted({x for r in rows.values() for x in r}, key=lambda x: (len(x), x))
                lines += ["", f"### {bench}: {metric} by {key.replace('_', ' ')}", ""]
                lines += ["| system | " + " | ".join(values) + " |", "|---|" + "---|" * len(values)]
                for s, r in rows.items():
                    lines.append(
                        f"| {s} | " + " | ".join(f"{r[x]:.3f}" if x in r else "–" for x in values) + " |"
                    )
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def write_report(out: Path, meta: dict[str, Any], command: str | None = None) -> dict[str, Any]:
    """Write summary.json, report.md and the plots under ``out``; returns the summary."""
    out = Path(out)
    (out / "eval_meta.json").write_text(json.dumps(meta, indent=1))
    bootstrap = meta.get("bootstrap", {})
    resamples, seed = bootstrap.get("resamples", 1000), bootstrap.get("seed", 0)
    summary = summarize(out, meta, resamples, seed)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    plots = _plots(out, summary, meta)
    (out / "report.md").write_text(_markdown(summary, meta, plots, command or meta.get("command")))
    return summary


def rebuild_report(out: Path) -> dict[str, Any]:
    """``hoprag eval report EVAL_DIR``: the report again, from stored results only."""
    out = Path(out)
    meta_path = out / "eval_meta.json"
    if not meta_path.is_file():
        raise ValueError(f"{out} holds no evaluation (no eval_meta.json)")
    return write_report(out, json.loads(meta_path.read_text()))
