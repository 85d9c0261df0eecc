"""Cluster manifests: the committed KubeRay manifests and launcher YAML validate against KubeRay's CRDs
and Ray's cluster-launcher schema, equal a fresh render of cluster/params/example.yaml, embed the
project's Serve config with only the declared overrides, and run valid hoprag commands."""

from __future__ import annotations

import argparse
import copy
import functools
import importlib.util
import json
import re
import shlex
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from cluster.params import ClusterParams, load_params, parse_params
from cluster.render import (
    check_rendered,
    render_all,
    render_raycluster,
    render_rayjob,
    render_rayservice,
    write_rendered,
)
from hoprag_cli.cluster import add_cluster_parser, run_cluster_command

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "cluster"
EXAMPLE = CLUSTER / "params" / "example.yaml"
MANIFESTS = sorted((CLUSTER / "manifests").glob("*.yaml"))
LAUNCHER = CLUSTER / "launcher" / "aws-gpu.yaml"
# Read in place, never copied into the project (see ../shared/vendor/kuberay-crds/SOURCE.md).
CRD_DIR = ROOT.parent / "shared" / "vendor" / "kuberay-crds"
CRD_FILES = {
    "RayCluster": "ray.io_rayclusters.yaml",
    "RayJob": "ray.io_rayjobs.yaml",
    "RayService": "ray.io_rayservices.yaml",
}
# Values KubeRay v1 accepts; the CRD types both fields as free strings, so the schema cannot check them.
SUBMISSION_MODES = {"K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"}
UPGRADE_TYPES = {"NewCluster", "NewClusterWithIncrementalUpgrade", "None"}

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: the CRDs are 60k lines


def _load(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)


def _openapi_to_json_schema(node: Any, strict: bool = False) -> Any:
    """OpenAPI v3 ``nullable: true`` is not JSON Schema: turn it into a ``null`` type alternative.

    ``strict``: an object with declared ``properties`` (and no ``x-kubernetes-preserve-unknown-fields``)
    accepts no other keys, as the API server's structural pruning would drop them silently; the CRDs
    never say ``additionalProperties: false`` themselves, so without this a misspelled field passes.
    """
    if isinstance(node, list):
        return [_openapi_to_json_schema(n, strict) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _openapi_to_json_schema(v, strict) for k, v in node.items() if k != "nullable"}
    if node.get("nullable") is True and "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        out["type"] = [*types, "null"]
    if (
        strict
        and "properties" in node
        and "additionalProperties" not in node
        and not node.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


@functools.cache
def _crd_validator(kind: str, api_version: str) -> Draft7Validator:
    if not CRD_DIR.is_dir():
        pytest.skip(f"KubeRay CRDs not found at {CRD_DIR}")
    crd = _load((CRD_DIR / CRD_FILES[kind]).read_text())
    group, version = api_version.split("/")
    assert crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kind
    entry = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    assert entry["served"], f"{kind} {version} is not served by this CRD"
    schema = _openapi_to_json_schema(entry["schema"]["openAPIV3Schema"], strict=True)
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema)


def _crd_errors(manifest: dict[str, Any]) -> list[str]:
    validator = _crd_validator(manifest["kind"], manifest["apiVersion"])
    return [
        f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in validator.iter_errors(manifest)
    ]


@functools.cache
def _ray_schema_validator() -> Draft7Validator:
    spec = importlib.util.find_spec("ray")  # locates the package without importing Ray
    assert spec is not None and spec.submodule_search_locations
    path = Path(next(iter(spec.submodule_search_locations))) / "autoscaler" / "ray-schema.json"
    schema = _openapi_to_json_schema(json.loads(path.read_text()))
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema)


@functools.cache
def _example() -> ClusterParams:
    return load_params(EXAMPLE)


def _manifest(name: str) -> dict[str, Any]:
    return _load((CLUSTER / "manifests" / name).read_text())


def _pod_specs(manifest: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    spec = manifest["spec"]
    cluster = spec.get("rayClusterSpec") or spec.get("rayClusterConfig") or spec
    pods = [("head", cluster["headGroupSpec"]["template"]["spec"])]
    pods += [("worker", g["template"]["spec"]) for g in cluster["workerGroupSpecs"]]
    return pods


# --------------------------------------------------------------------------- KubeRay CRDs


def test_every_kind_is_rendered() -> None:
    assert [p.name for p in MANIFESTS] == [
        "raycluster.yaml",
        "rayjob-eval.yaml",
        "rayjob-index.yaml",
        "rayjob-train.yaml",
        "rayservice.yaml",
    ]


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_manifest_validates_against_its_kuberay_crd(path: Path) -> None:
    manifest = _load(path.read_text())
    assert manifest["apiVersion"] == "ray.io/v1" and manifest["kind"] in CRD_FILES
    assert _crd_errors(manifest) == []


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if value is _DELETE:
        del node[last]
    else:
        node[int(last) if isinstance(node, list) else last] = value


_DELETE = object()
_WORKER = "spec.workerGroupSpecs.0"
_HEAD_CONTAINER = "spec.headGroupSpec.template.spec.containers.0"


@pytest.mark.parametrize(
    ("name", "dotted", "value"),
    [
        ("raycluster.yaml", f"{_WORKER}.minReplicas", "two"),  # int32 field given a string
        ("raycluster.yaml", "spec.headGroupSpec.rayStartParams.num-cpus", 0),  # map of strings
        ("raycluster.yaml", f"{_HEAD_CONTAINER}.resources.limits.memory", "32 GB"),  # quantity pattern
        ("raycluster.yaml", "spec.authOptions.mode", "on"),  # enum
        ("rayjob-train.yaml", "spec.shutdownAfterJobFinishes", "yes"),  # boolean
        ("rayjob-index.yaml", "spec.rayClusterSpec.autoscalerOptions.upscalingMode", "Fast"),  # enum
        ("rayservice.yaml", "spec.rayClusterConfig", _DELETE),  # required
        ("rayservice.yaml", "spec.serveConfigV2", {"applications": []}),  # must be a YAML string
        ("rayjob-index.yaml", "spec.rayClusterSpec.autoscalerOption", {}),  # misspelled field
        ("raycluster.yaml", f"{_WORKER}.maxReplica", 4),  # misspelled field
    ],
)
def test_crd_validation_catches_broken_manifests(name: str, dotted: str, value: Any) -> None:
    manifest = _manifest(name)
    assert _crd_errors(manifest) == []
    _set(manifest, dotted, value)
    assert _crd_errors(manifest), f"setting {dotted} to {value!r} should fail the {manifest['kind']} CRD"


def test_openapi_nullable_becomes_a_null_alternative() -> None:
    schema = _openapi_to_json_schema({"properties": {"x": {"type": "integer", "nullable": True}}})
    validator = Draft7Validator(schema)
    assert validator.is_valid({"x": None}) and validator.is_valid({"x": 1})
    assert not validator.is_valid({"x": "1"})


# --------------------------------------------------------------------------- drift


def test_rendering_the_example_gives_the_committed_files() -> None:
    files = render_all(_example())
    assert sorted(files) == sorted(
        [f"manifests/{p.name}" for p in MANIFESTS] + [LAUNCHER.relative_to(CLUSTER).as_posix()]
    )
    for name, text in files.items():
        assert text.startswith(
            "# Rendered by: hoprag cluster render --params cluster/params/example.yaml --out cluster  "
            "(do not edit; edit the params or the stage configs)\n"
        )
        assert (CLUSTER / name).read_text() == text, f"{name} drifted: run hoprag cluster render"
    assert check_rendered(files, CLUSTER) == []


def test_example_params_start_with_their_render_command() -> None:
    assert EXAMPLE.read_text().startswith(
        "# hoprag cluster render --params cluster/params/example.yaml --out cluster\n"
    )


def test_check_reports_changed_missing_and_stale_files(tmp_path: Path) -> None:
    files = render_all(_example())
    write_rendered(files, tmp_path)
    assert check_rendered(files, tmp_path) == []
    (tmp_path / "manifests" / "rayservice.yaml").write_text("# hand-edited\n")
    (tmp_path / "manifests" / "rayjob-eval.yaml").unlink()
    stale = tmp_path / "manifests" / "rayjob-old.yaml"
    stale.write_text(files["manifests/rayjob-index.yaml"])
    (tmp_path / "manifests" / "notes.yaml").write_text("mine: true\n")  # not rendered: left alone
    assert check_rendered(files, tmp_path) == [
        "manifests/rayjob-eval.yaml",
        "manifests/rayservice.yaml",
        "manifests/rayjob-old.yaml",
    ]
    write_rendered(files, tmp_path)
    assert check_rendered(files, tmp_path) == [] and not stale.exists()
    assert (tmp_path / "manifests" / "notes.yaml").exists()


def test_cli_render_and_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="hoprag")
    add_cluster_parser(parser.add_subparsers(dest="command", required=True))
    out = tmp_path / "out"
    argv = ["cluster", "render", "--params", str(EXAMPLE), "--out", str(out)]
    assert run_cluster_command(parser.parse_args(argv)) == 0
    assert run_cluster_command(parser.parse_args([*argv, "--check"])) == 0
    (out / "launcher" / "aws-gpu.yaml").write_text("max_workers: 1\n")
    capsys.readouterr()
    assert run_cluster_command(parser.parse_args([*argv, "--check"])) == 1
    assert "launcher/aws-gpu.yaml" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text(EXAMPLE.read_text().replace("max_replicas: 8", "max_replicas: eight"))
    with pytest.raises(ValueError, match=r"bad\.yaml: .*gpu_workers\.max_replicas"):
        run_cluster_command(parser.parse_args(["cluster", "render", "--params", str(bad), "--out", str(out)]))


# --------------------------------------------------------------------------- contents


def test_serve_config_v2_is_the_serving_config_with_only_the_declared_overrides() -> None:
    from serving.settings import QAAppSettings

    params = _example()
    service = _manifest("rayservice.yaml")
    embedded = yaml.safe_load(service["spec"]["serveConfigV2"])
    expected = yaml.safe_load((ROOT / params.serving.config).read_text())
    app = next(a for a in expected["applications"] if a["name"] == params.serving.app)
    app["args"]["index"] = params.serving.index
    app["args"]["retriever"] = params.serving.retriever
    assert embedded == expected
    settings = QAAppSettings.model_validate(app["args"])
    assert settings.auth.token_env == "HOPRAG_TOKEN"
    assert service["spec"]["upgradeStrategy"]["type"] in UPGRADE_TYPES
    assert service["spec"]["upgradeStrategy"]["type"] == params.serving.upgrade_strategy


@pytest.mark.parametrize("stage", ["index", "train", "eval"])
def test_rayjob_entrypoint_is_a_valid_hoprag_command(stage: str) -> None:
    from hoprag_cli import build_parser

    params = _example()
    job = _manifest(f"rayjob-{stage}.yaml")
    argv = shlex.split(job["spec"]["entrypoint"])
    assert argv[0] == "hoprag"
    args = build_parser().parse_args(argv[1:])
    assert args.command == stage
    config = getattr(args, "config", None)
    if config is not None:
        # Configs are passed as paths inside the image; the same file must exist in this checkout.
        rel = PurePosixPath(config).relative_to(params.images.project_dir)
        assert (ROOT / rel).is_file()
    if stage == "index":
        assert (str(args.corpus), str(args.out)) == (params.index.corpus, params.index.out)
        assert "ray.address=auto" in args.overrides
        from hoprag.config import load_config
        from indexing.config import IndexConfig

        loaded = load_config(IndexConfig, ROOT / rel, args.overrides)
        assert loaded.ray.address == "auto"
    elif stage == "train":
        assert ([str(p) for p in args.index], str(args.out)) == ([params.train.index], params.train.out)
        assert args.workers == params.train.workers and args.ray_address == "auto"
    else:
        assert args.eval == "run" and args.index == params.eval.index
        assert args.retriever == params.eval.retriever and str(args.out) == params.eval.out
        assert "ray.address=auto" in args.overrides


def test_rayjobs_clean_up_and_retry() -> None:
    params = _example()
    for stage in ("index", "train", "eval"):
        spec = _manifest(f"rayjob-{stage}.yaml")["spec"]
        assert spec["submissionMode"] in SUBMISSION_MODES
        assert spec["shutdownAfterJobFinishes"] is True
        assert spec["ttlSecondsAfterFinished"] == getattr(params, stage).ttl_seconds_after_finished
        assert spec["backoffLimit"] == getattr(params, stage).backoff_limit
        assert spec["rayClusterSpec"]["enableInTreeAutoscaling"] is True


def test_train_job_fits_the_gpu_workers_and_checkpoints_on_shared_storage() -> None:
    params = _example()
    train = yaml.safe_load((ROOT / params.train.config).read_text())["run"]
    workers = params.gpu_workers
    assert train["use_gpu"] is True
    assert params.train.workers <= workers.max_replicas * workers.gpus
    # Ray Train asks for cpus_per_worker with each GPU: a pod must hold that many per GPU.
    assert train["cpus_per_worker"] * workers.gpus <= workers.cpus
    # No object-store prefix: Ray Train stores checkpoints in RUN_DIR/ray on the shared volume.
    assert params.storage.object_store_prefix is None and train.get("storage_path") is None
    assert PurePosixPath(params.storage.mount_path) in PurePosixPath(params.train.out).parents


def test_object_store_prefix_becomes_ray_train_storage() -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["storage"]["object_store_prefix"] = "s3://bucket/hoprag/"
    entry = render_rayjob(parse_params(data), "train")["spec"]["entrypoint"]
    assert "--set run.storage_path=s3://bucket/hoprag/ray-train/glm-t5-large" in entry


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_every_pod_mounts_shared_storage_and_gets_secrets(path: Path) -> None:
    params = _example()
    manifest = _load(path.read_text())
    cluster = manifest["spec"].get("rayClusterSpec") or manifest["spec"].get("rayClusterConfig")
    cluster = cluster or manifest["spec"]
    assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    assert cluster["rayVersion"] == params.ray_version and cluster["enableInTreeAutoscaling"] is True
    (group,) = cluster["workerGroupSpecs"]
    assert (group["minReplicas"], group["maxReplicas"]) == (0, 8)
    for role, pod in _pod_specs(manifest):
        (container,) = pod["containers"]
        assert container["image"] == (params.images.head if role == "head" else params.images.worker)
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert len(volumes) == len(pod["volumes"]) and len(mounts) == len(container["volumeMounts"])
        claim = volumes[mounts[params.storage.mount_path]]["persistentVolumeClaim"]["claimName"]
        assert claim == params.storage.claim_name
        env = {e["name"]: e for e in container["env"]}
        assert len(env) == len(container["env"])
        assert env["OPENAI_API_KEY"]["valueFrom"]["secretKeyRef"]["key"] == "openai-api-key"
        assert env["HOPRAG_TOKEN"]["valueFrom"]["secretKeyRef"] == {
            "name": "hoprag-secrets",
            "key": "qa-token",
        }
        limits = container["resources"]["limits"]
        assert ("nvidia.com/gpu" in limits) == (role == "worker")


def test_versions_and_image_layout_agree() -> None:
    params = _example()
    pin = re.search(r'"ray\[[^\]]*\]==([\d.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pin is not None and pin.group(1) == params.ray_version
    dockerfile = (CLUSTER / "Dockerfile").read_text()
    assert f"ARG BASE_IMAGE=rayproject/ray:{params.ray_version}-py311-gpu" in dockerfile
    assert f"WORKDIR {params.images.project_dir}\n" in dockerfile


# --------------------------------------------------------------------------- cluster launcher


def test_launcher_validates_against_rays_schema() -> None:
    config = _load(LAUNCHER.read_text())
    validator = _ray_schema_validator()
    assert [e.message for e in validator.iter_errors(config)] == []
    for dotted, value in [("max_workers", "eight"), ("docker.imagee", "x"), ("provider", _DELETE)]:
        broken = copy.deepcopy(config)
        _set(broken, dotted, value)
        assert not validator.is_valid(broken), f"{dotted}={value!r} should fail ray-schema.json"


def test_launcher_runs_the_project_image_and_installs_the_synced_repo() -> None:
    params = _example()
    config = _load(LAUNCHER.read_text())
    assert config["provider"]["type"] == "aws" and config["docker"]["image"] == params.images.worker
    head = config["available_node_types"][config["head_node_type"]]
    assert head["resources"] == {"CPU": 0}
    (worker,) = (v for k, v in config["available_node_types"].items() if k != config["head_node_type"])
    assert worker["resources"] == {"CPU": params.gpu_workers.cpus, "GPU": params.gpu_workers.gpus}
    assert (worker["min_workers"], worker["max_workers"]) == (0, config["max_workers"])
    assert config["file_mounts"][params.images.project_dir] == "."
    # Token auth: the launching machine's token on every node, and Ray started in token mode there.
    assert config["file_mounts"]["~/.ray/auth_token"] == params.launcher.auth_token_file
    starts = config["head_start_ray_commands"] + config["worker_start_ray_commands"]
    assert sum("export RAY_AUTH_MODE=token;" in c and "ray start" in c for c in starts) == 2
    assert any("pip install" in c and params.images.project_dir in c for c in config["setup_commands"])
    assert f"-v {params.storage.mount_path}:{params.storage.mount_path}" in config["docker"]["run_options"]


# --------------------------------------------------------------------------- bad params


def _example_data() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text())


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"gpu_workers.min_replicas": 3, "gpu_workers.max_replicas": 2},
            r"gpu_workers: max_replicas \(2\) must be at least min_replicas \(3\)",
        ),
        ({"gpu_workers.maxReplicas": 4}, r"gpu_workers\.maxReplicas: unknown field"),
        ({"gpu_workers.max_replicas": "eight"}, r"gpu_workers\.max_replicas: .*integer"),
        ({"head.memory": "32 GB"}, r"head\.memory: .*Kubernetes quantity"),
        ({"index.corpus": "s3://bucket/corpus.parquet"}, r"index\.corpus: .*URI"),
        ({"serving.index": "/data/index"}, r"serving\.index: /data/index is not on the shared volume"),
        (
            {"serving.retriever": "/data/glm+dense"},  # each retriever of a fused spec is checked
            r"serving\.retriever: /data/glm is not on the shared volume",
        ),
        ({"eval.retriever": "dense+"}, r"eval\.retriever: .*an empty name around '\+'"),
        ({"train.workers": 64}, r"train\.workers \(64\) needs one GPU each"),
        ({"serving.upgrade_strategy": "Rolling"}, r"serving\.upgrade_strategy: "),
        ({"eval.config": "evaluation/configs/synthetic-cpu.yaml"}, r"eval: give either 'config' or 'index'"),
        ({"index.overrides": ["ray.address"]}, r"index\.overrides: .*key\.sub=value"),
        ({"name_prefix": "Hop_RAG"}, r"name_prefix: .*start with a letter"),
        ({"storage": _DELETE}, r"storage: required field is missing"),
    ],
)
def test_bad_params_give_one_clear_line(changes: dict[str, Any], message: str) -> None:
    data = _example_data()
    for dotted, value in changes.items():
        _set(data, dotted, value)
    with pytest.raises(ValueError, match=r"^example\.yaml: invalid cluster params: .*" + message) as info:
        parse_params(data, "example.yaml")
    assert "\n" not in str(info.value)


def test_load_params_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"cluster params file .*missing\.yaml does not exist"):
        load_params(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("namespace: [unclosed\n")
    with pytest.raises(ValueError, match=r"broken\.yaml is not valid YAML"):
        load_params(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n")
    with pytest.raises(ValueError, match=r"list\.yaml must hold a mapping"):
        load_params(listed)


def test_render_refuses_what_the_pods_could_not_run() -> None:
    data = _example_data()
    data["serving"]["app"] = "qa"
    with pytest.raises(
        ValueError, match=r"serving\.app: serving/config/gpu-vllm\.yaml has no single application 'qa'"
    ):
        render_all(parse_params(data))
    data = _example_data()
    data["train"]["config"] = "training/configs/missing.yaml"
    with pytest.raises(ValueError, match=r"train\.config: training/configs/missing\.yaml does not exist"):
        render_all(parse_params(data))
    data = _example_data()
    del data["secrets"]["qa_token"]
    with pytest.raises(ValueError, match=r"secrets\.qa_token: .*HOPRAG_TOKEN"):
        render_all(parse_params(data))
    # Serve builds the RayService's apps on the head: the vLLM app needs vLLM in the head image.
    data = _example_data()
    data["images"]["head"] = "ghcr.io/example/hoprag:cpu"
    with pytest.raises(ValueError, match=r"app\(s\) llm import ray\.serve\.llm"):
        render_all(parse_params(data))
    data["images"]["head_has_vllm"] = True
    assert "manifests/rayservice.yaml" in render_all(parse_params(data))


@pytest.mark.parametrize(
    ("stage", "override"),
    [("index", "extraction.batchsize=8"), ("train", "optim.lr=1e-4"), ("eval", "judge.enable=true")],
)
def test_render_validates_each_stage_config_with_its_overrides(stage: str, override: str) -> None:
    """A misspelled --set in the params fails the render (the strict stage models), not the RayJob."""
    data = _example_data()
    data[stage]["overrides"] = [override]
    key = re.escape(override.split("=")[0])
    with pytest.raises(ValueError, match=rf"^{stage}: .*unknown setting {key}") as info:
        render_all(parse_params(data))
    assert "\n" not in str(info.value)


def test_render_validates_the_qa_app_args(tmp_path: Path) -> None:
    params = _example()
    for rel in (params.index.config, params.train.config, params.serving.config):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((ROOT / rel).read_text())
    serve = tmp_path / params.serving.config
    serve.write_text(serve.read_text().replace("request_timeout_s:", "request_timeout:"))
    with pytest.raises(
        ValueError, match=r"serving\.config: .*unknown setting request_timeout \(did you mean"
    ):
        render_all(params, repo_root=tmp_path)


def test_render_functions_are_pure() -> None:
    params = _example()
    serve = yaml.safe_load((ROOT / params.serving.config).read_text())
    before = copy.deepcopy(serve)
    assert render_rayservice(params, serve) == render_rayservice(params, serve)
    assert serve == before  # the overrides are applied to a copy
    assert render_raycluster(params)["spec"]["workerGroupSpecs"][0]["groupName"] == "gpu"
