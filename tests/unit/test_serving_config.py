"""Serve config YAMLs parse as Ray Serve deploy configs; the hoprag app's args are valid settings."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from serving.schemas import QARequest
from serving.settings import QAAppSettings, RequestLimits

CONFIGS = sorted((Path(__file__).parents[2] / "serving" / "config").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_serve_configs_are_valid(path: Path) -> None:
    from ray.serve.schema import ServeDeploySchema

    text = path.read_text()
    assert text.startswith("# serve "), "the first line shows the command that runs it"
    config = ServeDeploySchema.model_validate(yaml.safe_load(text))
    apps = {a.name: a for a in config.applications}
    hoprag = apps["hoprag"]
    assert hoprag.import_path == "serving.builder:build_app"
    settings = QAAppSettings.model_validate(hoprag.args)
    for d in (settings.ingress, settings.qa, settings.retriever_deployment, settings.llm_deployment):
        options = d.options()
        assert options["autoscaling_config"]["max_replicas"] >= options["autoscaling_config"]["min_replicas"]
        assert options["max_queued_requests"] != 0


def test_gpu_config_passes_llm_calls_to_the_serve_llm_app() -> None:
    from ray.serve.schema import ServeDeploySchema

    config = ServeDeploySchema.model_validate(
        yaml.safe_load((CONFIGS[0].parent / "gpu-vllm.yaml").read_text())
    )
    apps = {a.name: a for a in config.applications}
    assert apps["llm"].import_path == "ray.serve.llm:build_openai_app" and apps["llm"].route_prefix == "/llm"
    settings = QAAppSettings.model_validate(apps["hoprag"].args)
    assert settings.llm.backend == "openai" and settings.llm.openai.base_url.endswith("/llm/v1")
    assert settings.retriever_deployment.num_gpus > 0 and settings.auth.token_env == "HOPRAG_TOKEN"


def test_request_schema_limits() -> None:
    assert QARequest(question="Who?").mode == "retrieve"
    for bad in (
        {"question": ""},
        {"question": " "},
        {"question": "x", "top_k": 0},
        {"question": "x", "mode": "y"},
    ):
        with pytest.raises(ValueError):
            QARequest.model_validate(bad)


def test_request_limits_are_typed_settings_with_defaults() -> None:
    limits = QAAppSettings(index="x").limits
    assert limits == RequestLimits()
    assert (
        limits.max_body_bytes == 1_048_576 and limits.max_chat_messages > 1 and limits.max_message_chars > 0
    )
    assert all(field.description for field in RequestLimits.model_fields.values())
    assert QAAppSettings.model_fields["limits"].description
    custom = QAAppSettings.model_validate({"index": "x", "limits": {"max_body_bytes": 4096}})
    assert (
        custom.limits.max_body_bytes == 4096 and custom.limits.max_chat_messages == limits.max_chat_messages
    )
    for bad in ({"max_body_bytes": 0}, {"max_chat_messages": 0}, {"max_message_chars": -1}):
        with pytest.raises(ValueError):
            QAAppSettings.model_validate({"index": "x", "limits": bad})


def test_building_the_app_checks_its_sources_without_loading_them(tmp_path: Path, embedder) -> None:
    from serving.builder import build_app
    from tests.support.film_kg import write_film_index, write_tiny_glm

    index = write_film_index(tmp_path / "index", embedder)
    glm = write_tiny_glm(tmp_path / "glm" / "retriever").parent
    from ray.serve import Application

    app = build_app({"index": str(index), "retriever": str(glm)})
    # The ingress bound over one QA deployment per index, with the given sources (Ray keeps the
    # bound deployment in a private attribute; there is no public accessor).
    ingress = app._bound_deployment
    assert isinstance(app, Application) and ingress.name == "QAIngress"
    qa_by_index, jobs, settings = ingress.init_args
    assert list(qa_by_index) == ["default"] and jobs._bound_deployment.name == "IndexJobs"
    assert qa_by_index["default"]._bound_deployment.name == "QA-default"
    assert (str(settings.index), str(settings.retriever)) == (str(index), str(glm))
    several = build_app(
        {
            "indexes": [
                {"name": "films", "index": str(index), "retriever": str(glm)},
                {"name": "b", "index": str(index)},
            ]
        }
    )
    qa_by_index = several._bound_deployment.init_args[0]
    assert {n: q._bound_deployment.name for n, q in qa_by_index.items()} == {"films": "QA-films", "b": "QA-b"}
    with pytest.raises(ValueError, match=r"index 'b': .*not a hoprag index"):
        build_app(
            {"indexes": [{"name": "films", "index": str(index)}, {"name": "b", "index": str(tmp_path)}]}
        )
    # A roll-out to a bad path fails in the builder, before Serve replaces any running replica.
    with pytest.raises(ValueError, match="not a hoprag index"):
        build_app({"index": str(tmp_path / "missing-index")})
    with pytest.raises(ValueError, match="not a retriever directory"):
        build_app({"index": str(index), "retriever": str(tmp_path / "no-glm")})
    (glm / "retriever" / "model.safetensors").unlink()  # a half-copied checkpoint
    with pytest.raises(ValueError, match=r"has no model\.safetensors"):
        build_app({"index": str(index), "retriever": str(glm)})


def test_a_stuck_ray_shutdown_is_bounded_and_kills_the_local_cluster(monkeypatch, capsys) -> None:
    """`hoprag serve`'s Ctrl-C never hangs: if Ray does not stop within the grace period, the
    processes it started are killed (here a stand-in child process) and the stuck stacks printed."""
    import subprocess
    import sys
    import threading

    import serving.run as run

    never = threading.Event()
    monkeypatch.setattr(run, "stop_app", lambda: never.wait(60))  # a shutdown that never returns
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        assert run.stop_within(0.5) is False
        child.wait(timeout=30)  # killed (it would sleep for 120 s); psutil has reaped it
    finally:
        never.set()
        if child.poll() is None:
            child.kill()
    out = capsys.readouterr()
    assert "did not stop within 0 s; killing" in out.out
    assert "hoprag-stop" in out.err  # the stuck thread's stack, for a bug report


def test_a_prompt_ray_shutdown_is_clean(monkeypatch) -> None:
    import serving.run as run

    calls = []
    monkeypatch.setattr(run, "stop_app", lambda: calls.append("stopped"))
    assert run.stop_within(30) is True and calls == ["stopped"]


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_serve_stops_on_ctrl_c_and_sigterm_even_if_started_with_sigint_ignored(signum: str) -> None:
    """A background job of a non-interactive shell inherits SIGINT ignored (and Ray replaces
    SIGTERM's handler): hoprag serve's own handlers turn both into its clean stop."""
    import signal
    import subprocess
    import sys

    script = (
        "import os, signal, time\n"
        "from serving.run import stop_on_signals\n"
        "stop_on_signals()\n"
        "try:\n"
        f"    os.kill(os.getpid(), signal.{signum})\n"
        "    time.sleep(30)\n"
        "except KeyboardInterrupt as exc:\n"
        "    print('stopping on', exc)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert run.returncode == 0 and run.stdout.strip() == f"stopping on {signum}", run.stderr


def test_an_app_serves_one_index_or_several_named_ones() -> None:
    one = QAAppSettings(index="/srv/a", retriever="/srv/glm")
    assert [(i.name, i.index, i.retriever) for i in one.served_indexes] == [("default", "/srv/a", "/srv/glm")]
    assert one.default_index_name == "default"
    several = QAAppSettings.model_validate(
        {
            "indexes": [{"name": "films", "index": "/a"}, {"name": "music", "index": "/b"}],
            "default_index": "music",
        }
    )
    assert [i.name for i in several.served_indexes] == ["films", "music"]
    assert several.default_index_name == "music" and several.served_indexes[0].retriever == "routed"
    assert QAAppSettings.model_validate({"indexes": [{"name": "a", "index": "/a"}]}).default_index_name == "a"
    for bad, fragment in (
        ({}, "either `index`"),
        ({"index": "/a", "indexes": [{"name": "a", "index": "/a"}]}, "either `index`"),
        ({"indexes": [{"name": "a", "index": "/a"}], "retriever": "/glm"}, "each entry names its own"),
        ({"indexes": [{"name": "a", "index": "/a"}, {"name": "a", "index": "/b"}]}, "repeated: a"),
        ({"indexes": [{"name": "a", "index": "/a"}], "default_index": "b"}, "not one of a"),
        ({"indexes": [{"name": "Films!", "index": "/a"}]}, "lower-case letters"),
    ):
        with pytest.raises(ValueError, match=fragment):
            QAAppSettings.model_validate(bad)


def test_hoprag_serve_names_indexes_on_the_command_line() -> None:
    from hoprag_cli.common import UserError
    from hoprag_cli.serve import served_indexes_from_args

    assert served_indexes_from_args(["runs/a"], []) == {"index": "runs/a", "retriever": "routed"}
    assert served_indexes_from_args(["runs/a"], ["runs/glm"]) == {"index": "runs/a", "retriever": "runs/glm"}
    assert served_indexes_from_args(["films=runs/a", "music=runs/b"], ["music=runs/glm"]) == {
        "indexes": [
            {"name": "films", "index": "runs/a", "retriever": "routed"},
            {"name": "music", "index": "runs/b", "retriever": "runs/glm"},
        ]
    }
    assert served_indexes_from_args([], []) == {}
    for indexes, retrievers, fragment in (
        (["runs/a", "runs/b"], [], "NAME=DIR for each"),
        (["films=runs/a"], ["books=runs/glm"], "NAME of an --index"),
        (["runs/a"], ["a=runs/glm"], "at most one --retriever SPEC"),
        ([], ["runs/glm"], "needs --index"),
    ):
        with pytest.raises(UserError, match=fragment):
            served_indexes_from_args(indexes, retrievers)
