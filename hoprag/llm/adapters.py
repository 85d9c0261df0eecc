"""LoRA adapters of a backend's base model: identity (a content hash for cache keys), the student
metadata ``hoprag distill`` writes beside them, and merging into the loaded weights (``peft``) beside
the base model, which keeps serving the tasks a student was not trained on.

An adapter directory holds PEFT's ``adapter_config.json`` and ``adapter_model.safetensors`` and,
when ``hoprag distill`` made it, ``student.json`` (base model, tasks, prompt versions, teacher,
data hash, held-out metrics). The tasks it lists are answered with the short student prompts
(:func:`hoprag.llm.base.uses_student_prompt`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator

logger = logging.getLogger(__name__)

PACKAGED_STUDENT = "packaged"
"""``llm.embedded.adapter`` value naming the student shipped in ``hoprag/data/student``."""

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "student.json")
STUDENT_META = "student.json"


def packaged_student_dir() -> Path:
    """The distilled student shipped with hoprag (a LoRA adapter of the packaged Gemma 3 270M,
    reproduced by the command in its student.json)."""
    return Path(__file__).resolve().parent.parent / "data" / "student"


class AdapterError(ValueError):
    """An adapter directory that cannot be used (missing, incomplete, or for another model)."""


def _checked(adapter: str | Path, setting: str = "llm.embedded.adapter") -> Path:
    path = Path(adapter)
    if not (path / "adapter_config.json").is_file():
        raise AdapterError(
            f"{setting}={adapter}: no adapter_config.json there (expected a PEFT LoRA adapter "
            "directory, e.g. the 'adapter' folder of a `hoprag distill` run)"
        )
    if not (path / "adapter_model.safetensors").is_file():
        raise AdapterError(f"{setting}={adapter}: adapter_model.safetensors is missing")
    return path


def adapter_fingerprint(adapter: str | Path, setting: str = "llm.embedded.adapter") -> str:
    """A 12-hex-digit hash of the adapter's files (weights, config, student metadata).
    ``setting`` names the config field in error messages."""
    path = _checked(adapter, setting)
    stamp = tuple(
        (name, (path / name).stat().st_size, (path / name).stat().st_mtime_ns)
        for name in ADAPTER_FILES
        if (path / name).is_file()
    )
    return _fingerprint(str(path.resolve()), stamp)


@functools.lru_cache(maxsize=64)
def _fingerprint(path: str, stamp: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    for name, _, _ in stamp:
        digest.update(name.encode())
        with (Path(path) / name).open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:12]


def read_student_meta(adapter: str | Path, setting: str = "llm.embedded.adapter") -> dict[str, Any]:
    """The adapter's ``student.json`` ({} for an adapter made elsewhere)."""
    meta = _checked(adapter, setting) / STUDENT_META
    return _json_object(meta) if meta.is_file() else {}


def _json_object(path: Path) -> dict[str, Any]:
    """A JSON file of the adapter that must hold an object (clear AdapterError otherwise)."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise AdapterError(f"{path} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise AdapterError(f"{path} must hold a JSON object")
    return data


def lora_rank(adapter: str | Path, setting: str = "llm.embedded.adapter") -> int:
    """The largest LoRA rank in the adapter's ``adapter_config.json``: ``r``, or a larger per-module
    rank of its ``rank_pattern`` (what a serving engine's maximum rank must cover)."""
    config_file = _checked(adapter, setting) / "adapter_config.json"
    config = _json_object(config_file)
    ranks = [config.get("r"), *(config.get("rank_pattern") or {}).values()]
    ints = [r for r in ranks if isinstance(r, int) and not isinstance(r, bool)]
    if not ints or any(r < 1 for r in ints):
        raise AdapterError(
            f"{config_file}: no LoRA rank 'r' (a positive integer) in it; is it a LoRA adapter?"
        )
    return max(ints)


def student_tasks(adapter: str | Path, setting: str = "llm.embedded.adapter") -> frozenset[str]:
    """The tasks a distilled student answers with the student prompts: its student.json's ``tasks``,
    less those whose prompts it records training on in other texts than this version's (they then
    get the base prompts, with a warning: their student prompts would not be the ones it learnt).
    The extraction student prompts (``prompt_versions.student``) cover every task; the planner's
    (``prompt_versions.planner``) its ``plan`` and ``update`` tasks."""
    from hoprag.extraction.prompts import STUDENT_PROMPT_VERSION
    from hoprag.llm.base import TASK_PLAN, TASK_UPDATE
    from hoprag.planner.prompts import PLANNER_PROMPT_VERSION

    meta = read_student_meta(adapter, setting)
    tasks = frozenset(meta.get("tasks", ()))
    trained_on = meta.get("prompt_versions") or {}
    for kind, current, covered in (
        ("student", STUDENT_PROMPT_VERSION, tasks),
        ("planner", PLANNER_PROMPT_VERSION, tasks & {TASK_PLAN, TASK_UPDATE}),
    ):
        trained = trained_on.get(kind)
        if covered and trained is not None and trained != current:
            logger.warning(
                "%s=%s was trained on %s prompts %s, this hoprag has %s: using the base prompts for "
                "its tasks %s (re-run `hoprag distill` to train it on these)",
                setting,
                adapter,
                kind,
                trained,
                current,
                sorted(covered),
            )
            tasks = tasks - covered
    return tasks


def task_routes(adapters: Sequence[str | Path], setting: str = "llm.embedded.adapter") -> dict[str, int]:
    """Which of several adapters serves each task: ``{task: index into adapters}``, from each
    adapter's :func:`student_tasks`. One adapter may be any PEFT adapter ({} without student tasks:
    it then serves every prompt). Of several, each must be a distilled student that lists its tasks
    (raises :class:`AdapterError`), so that every prompt has one adapter to go to; a task two list
    goes to the later one (logged): a student distilled for a task the shipped one also does, listed
    after it (``[packaged, runs/my-answers/adapter]``), takes that task over and leaves it the rest."""
    if len(adapters) <= 1:
        return {task: 0 for adapter in adapters for task in student_tasks(adapter, setting)}
    routes: dict[str, int] = {}
    for index, adapter in enumerate(adapters):
        tasks = student_tasks(adapter, setting)
        if not tasks:
            raise AdapterError(
                f"{setting}: {adapter} lists no tasks (no student.json 'tasks', or only tasks of "
                "older prompts); of several adapters each must be a `hoprag distill` student, so "
                "every prompt has one adapter to go to"
            )
        for task in sorted(tasks):
            if task in routes:
                logger.info(
                    "%s: %s serves the task %r instead of %s (the later of a list takes a task over)",
                    setting,
                    adapter,
                    task,
                    adapters[routes[task]],
                )
            routes[task] = index
    return routes


def adapter_for_task(routes: Mapping[str, int], count: int, task: str | None) -> int | None:
    """Which of ``count`` configured adapters serves a prompt of ``task`` (``None``: the base
    model), given :func:`task_routes`: the student trained on the task; the base model for a task
    no student lists, because training on a few tasks un-teaches the rest (measured: the merged
    student answers the planner's few-shot plan prompt with an answer, "1. 1950", where the base
    model writes steps); the first adapter for a prompt without a task, or when no adapter lists
    tasks (a plain PEFT adapter serves everything). Every backend routes this way, so a list of
    students behaves the same embedded and on vLLM."""
    if count == 0:
        return None
    if task is None or not routes:
        return 0
    return routes.get(task)


def check_adapter_list(value: str | list[str] | None) -> str | list[str] | None:
    """Validate a backend's ``adapter`` setting when it is a list: not empty, no adapter twice (the
    pydantic validator of both backends' ``adapter`` fields)."""
    if isinstance(value, list):
        if not value:
            raise ValueError("an empty list of adapters; use null for the base model")
        if len(set(value)) != len(value):
            raise ValueError(f"an adapter is listed twice: {value}")
    return value


AdapterSetting = Annotated[str | list[str] | None, AfterValidator(check_adapter_list)]
"""A backend's ``adapter`` setting: one adapter directory, a list (validated by
:func:`check_adapter_list`), :data:`PACKAGED_STUDENT`, or null."""


def adapters_id_suffix(adapters: Sequence[Path], setting: str) -> str:
    """The part of a backend's model id naming its adapters: ``+adapter:<content hash>`` per
    adapter, in order ("" without). Several adapters that cannot be routed by task fail here
    (:func:`task_routes`), before any weights load."""
    if not adapters:
        return ""
    task_routes(adapters, setting)
    return "".join(f"+adapter:{adapter_fingerprint(a, setting)}" for a in adapters)


def task_adapter_id_suffix(adapters: Sequence[Path], task: str, setting: str) -> str:
    """The part of the model id of the weights a prompt of ``task`` runs on: ``+adapter:<hash>`` of
    the adapter :func:`adapter_for_task` picks, "" for the base weights. With one adapter serving
    the task this is :func:`adapters_id_suffix` itself, so caches keyed on a task's id (extraction,
    question NER) stay valid when students of other tasks are added beside it."""
    if not adapters:
        return ""
    index = adapter_for_task(task_routes(adapters, setting), len(adapters), task)
    return "" if index is None else f"+adapter:{adapter_fingerprint(adapters[index], setting)}"


def adapter_paths(value: str | list[str] | None, *, packaged_fits: bool) -> tuple[Path, ...]:
    """A backend's ``adapter`` setting (one directory, a list, or null) as directories in the
    configured order; :data:`PACKAGED_STUDENT` names :func:`packaged_student_dir`, or is dropped
    when ``packaged_fits`` is false (the backend runs another base than the packaged student's)."""
    names = value if isinstance(value, list) else [value] if value else []
    return tuple(
        packaged_student_dir() if name == PACKAGED_STUDENT else Path(name)
        for name in names
        if name != PACKAGED_STUDENT or packaged_fits
    )


def merged_beside(model: Any, adapter: str | Path) -> Any:
    """A second model: ``model`` with the LoRA adapter merged into a copy of the weights the adapter
    changes, sharing every other tensor (embeddings, MLPs, norms) with ``model``, which stays the
    untouched base. A student then serves its own tasks merged (no per-token adapter cost) and every
    other prompt from the base, for the memory of the adapted projections alone (Gemma 3 270M's
    attention projections: ~60 MB in bf16 against ~540 MB for a second full model)."""
    import copy

    import torch
    from peft import PeftModel
    from peft.tuners.lora import LoraLayer

    path = _checked(adapter)
    shared: dict[int, Any] = {id(t): t for t in (*model.parameters(), *model.buffers())}
    twin = copy.deepcopy(model, memo=shared)
    try:
        wrapped = PeftModel.from_pretrained(twin, str(path))
    except (RuntimeError, ValueError, KeyError) as exc:  # shapes or module names of another model
        raise AdapterError(f"adapter {adapter} does not fit this base model: {exc}") from exc
    for module in wrapped.modules():
        if isinstance(module, LoraLayer):  # merging writes into this weight: give the twin its own
            layer = module.get_base_layer()
            layer.weight = torch.nn.Parameter(layer.weight.detach().clone(), requires_grad=False)
    return wrapped.merge_and_unload()
