"""Render KubeRay manifests (RayCluster, RayJobs, RayService) and a Ray cluster-launcher YAML from
:class:`cluster.params.ClusterParams`.

The ``render_*`` functions are pure: parameters (and, for the RayService, the already loaded Serve
config) in, a manifest ``dict`` out. One function builds every pod template and one builds every
``rayClusterSpec``, so the RayCluster, the RayJobs' clusters and the RayService's cluster cannot
drift apart. :func:`render_all` reads the Serve config, checks the stage config files exist and
returns the text of every file; :func:`write_rendered` and :func:`check_rendered` write them or
report drift.
"""

from __future__ import annotations

import copy
import shlex
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

import yaml

from cluster import DEFAULT_OUT, DEFAULT_PARAMS
from cluster.params import LLM_API_KEY_ENV, QA_TOKEN_ENV, ClusterParams, SecretRef
from hoprag.config import read_yaml_mapping

if TYPE_CHECKING:
    from pydantic import BaseModel

REPO_ROOT = Path(__file__).resolve().parents[1]
HEADER = (
    "# Rendered by: hoprag cluster render --params {params} --out {out}  "
    "(do not edit; edit the params or the stage configs)"
)
RAY_API_VERSION = "ray.io/v1"
Stage = Literal["index", "train", "eval"]
Role = Literal["head", "worker"]
# Stages run as RayJobs, in pipeline order.
JOB_STAGES: tuple[Stage, ...] = ("index", "train", "eval")
# Only these output folders hold rendered files; anything else under --out is left alone.
RENDERED_DIRS = ("manifests", "launcher")

_SHARED_VOLUME = "shared"


# --------------------------------------------------------------------------- names and labels


def resource_names(params: ClusterParams) -> dict[str, str]:
    """Kubernetes names of the rendered resources, by role (``cluster``, ``index``, ``train``, ``eval``, ``qa``)."""
    prefix = params.name_prefix
    return {
        "cluster": prefix,
        **{stage: f"{prefix}-{stage}" for stage in JOB_STAGES},
        "qa": f"{prefix}-qa",
    }


def _labels(params: ClusterParams, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": "hoprag",
        "app.kubernetes.io/instance": params.name_prefix,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "hoprag-cluster-render",
    }


def _metadata(params: ClusterParams, name: str, component: str) -> dict[str, Any]:
    return {"name": name, "namespace": params.namespace, "labels": _labels(params, component)}


# --------------------------------------------------------------------------- pods


def _secret_env(name: str, ref: SecretRef) -> dict[str, Any]:
    key_ref: dict[str, Any] = {"name": ref.name, "key": ref.key}
    if ref.optional:
        key_ref["optional"] = True
    return {"name": name, "valueFrom": {"secretKeyRef": key_ref}}


def container_env(params: ClusterParams) -> list[dict[str, Any]]:
    """Environment of every Ray container: the secrets (by reference), then ``params.env``."""
    env: list[dict[str, Any]] = []
    if params.secrets.llm_api_key is not None:
        env.append(_secret_env(LLM_API_KEY_ENV, params.secrets.llm_api_key))
    if params.secrets.qa_token is not None:
        env.append(_secret_env(QA_TOKEN_ENV, params.secrets.qa_token))
    env.extend({"name": name, "value": value} for name, value in params.env.items())
    return env


def pod_template(params: ClusterParams, role: Role, component: str) -> dict[str, Any]:
    """The pod template of a head or GPU worker pod (the Ray container must come first for KubeRay)."""
    if role == "head":
        image, cpus, memory = params.images.head, params.head.cpus, params.head.memory
        limits: dict[str, Any] = {"cpu": str(cpus), "memory": memory}
        # Declared so KubeRay's head and serve Services find them by name.
        ports = [
            {"name": "gcs-server", "containerPort": 6379},
            {"name": "dashboard", "containerPort": 8265},
            {"name": "client", "containerPort": 10001},
            {"name": "serve", "containerPort": 8000},
            {"name": "metrics", "containerPort": 8080},
        ]
    else:
        w = params.gpu_workers
        image, cpus, memory = params.images.worker, w.cpus, w.memory
        limits = {"cpu": str(cpus), "memory": memory, w.gpu_resource: w.gpus}
        # Serve proxies run on every node (proxy_location: EveryNode), so workers serve HTTP too.
        ports = [{"name": "serve", "containerPort": 8000}, {"name": "metrics", "containerPort": 8080}]
    container: dict[str, Any] = {
        "name": f"ray-{role}",
        "image": image,
        "imagePullPolicy": params.images.pull_policy,
        "ports": ports,
        # Requests equal limits: Ray sizes its resources from the limits, and the scheduler must
        # reserve exactly that or Ray over-commits the node.
        "resources": {"requests": {"cpu": str(cpus), "memory": memory}, "limits": limits},
        # No /dev/shm volume here: KubeRay mounts a memory-backed one sized to the memory limit on
        # every Ray container (object store, NCCL) unless the template brings its own.
        "volumeMounts": [{"name": _SHARED_VOLUME, "mountPath": params.storage.mount_path}],
    }
    env = container_env(params)
    if env:
        container["env"] = env
    spec: dict[str, Any] = {
        "containers": [container],
        "volumes": [
            {"name": _SHARED_VOLUME, "persistentVolumeClaim": {"claimName": params.storage.claim_name}},
        ],
    }
    if role == "worker":
        if params.gpu_workers.node_selector:
            spec["nodeSelector"] = dict(params.gpu_workers.node_selector)
        if params.gpu_workers.tolerations:
            spec["tolerations"] = [dict(t) for t in params.gpu_workers.tolerations]
    return {"metadata": {"labels": _labels(params, component)}, "spec": spec}


def ray_cluster_spec(params: ClusterParams, component: str) -> dict[str, Any]:
    """A ``RayClusterSpec``: CPU head, one autoscaling GPU worker group, the shared volume everywhere.

    Used verbatim as the RayCluster's ``spec``, each RayJob's ``rayClusterSpec`` and the RayService's
    ``rayClusterConfig``.
    """
    head_params = {"dashboard-host": "0.0.0.0"}
    if not params.head.schedule_work:
        head_params["num-cpus"] = "0"
    w = params.gpu_workers
    return {
        "rayVersion": params.ray_version,
        "authOptions": {"mode": params.ray_auth},
        "enableInTreeAutoscaling": True,
        "autoscalerOptions": {"upscalingMode": "Default", "idleTimeoutSeconds": w.idle_timeout_seconds},
        "headGroupSpec": {"rayStartParams": head_params, "template": pod_template(params, "head", component)},
        "workerGroupSpecs": [
            {
                "groupName": w.group_name,
                "minReplicas": w.min_replicas,
                "maxReplicas": w.max_replicas,
                "rayStartParams": {},
                "template": pod_template(params, "worker", component),
            }
        ],
    }


# --------------------------------------------------------------------------- RayCluster


def render_raycluster(params: ClusterParams) -> dict[str, Any]:
    """A long-lived RayCluster for interactive use and ``ray job submit`` (dashboard port 8265)."""
    return {
        "apiVersion": RAY_API_VERSION,
        "kind": "RayCluster",
        "metadata": _metadata(params, resource_names(params)["cluster"], "cluster"),
        "spec": ray_cluster_spec(params, "cluster"),
    }


# --------------------------------------------------------------------------- RayJobs


def _in_image(params: ClusterParams, stage_config: str) -> str:
    return str(PurePosixPath(params.images.project_dir) / stage_config)


def _sets(overrides: list[str]) -> list[str]:
    return [arg for item in overrides for arg in ("--set", item)]


def stage_argv(params: ClusterParams, stage: Stage) -> list[str]:
    """The ``hoprag`` command line a stage's RayJob runs on its cluster (connects with address auto)."""
    if stage == "index":
        job = params.index
        return [
            *("hoprag", "index", "--corpus", job.corpus, "--out", job.out),
            *("--config", _in_image(params, job.config)),
            *_sets(["ray.address=auto", *job.overrides]),
        ]
    if stage == "train":
        train = params.train
        builtin = []
        if params.storage.object_store_prefix:
            # Checkpoints in the object store survive the loss of the volume; the run name keeps
            # several runs apart under one prefix.
            run_name = PurePosixPath(train.out).name
            builtin.append(f"run.storage_path={params.storage.object_store_prefix}/ray-train/{run_name}")
        return [
            *("hoprag", "train", "--index", train.index, "--out", train.out),
            *("--config", _in_image(params, train.config)),
            *("--workers", str(train.workers), "--ray-address", "auto"),
            *_sets([*builtin, *train.overrides]),
        ]
    ev = params.eval
    argv = ["hoprag", "eval", "run"]
    if ev.config is not None:
        argv += ["--config", _in_image(params, ev.config)]
    for index in ev.index:
        argv += ["--index", index]
    if ev.retriever is not None:
        argv += ["--retriever", ev.retriever]
    if ev.out is not None:
        argv += ["--out", ev.out]
    if ev.limit is not None:
        argv += ["--limit", str(ev.limit)]
    return argv + _sets(["ray.address=auto", *ev.overrides])


def stage_entrypoint(params: ClusterParams, stage: Stage) -> str:
    """:func:`stage_argv` as one shell-quoted string (a RayJob's ``entrypoint``)."""
    return shlex.join(stage_argv(params, stage))


def render_rayjob(params: ClusterParams, stage: Stage) -> dict[str, Any]:
    """A RayJob running one stage on its own autoscaling cluster, deleted ``ttl`` seconds after the end."""
    job = {"index": params.index, "train": params.train, "eval": params.eval}[stage]
    spec: dict[str, Any] = {
        "entrypoint": stage_entrypoint(params, stage),
        # K8sJobMode: a submitter Job runs `ray job submit` and follows the logs, so
        # `kubectl logs job/NAME` shows the stage's output; it is the mode every KubeRay v1 supports.
        "submissionMode": "K8sJobMode",
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": job.ttl_seconds_after_finished,
        "backoffLimit": job.backoff_limit,
    }
    if job.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = job.active_deadline_seconds
    spec["rayClusterSpec"] = ray_cluster_spec(params, stage)
    return {
        "apiVersion": RAY_API_VERSION,
        "kind": "RayJob",
        "metadata": _metadata(params, resource_names(params)[stage], stage),
        "spec": spec,
    }


# --------------------------------------------------------------------------- RayService


def serve_config_with_overrides(params: ClusterParams, serve_config: dict[str, Any]) -> dict[str, Any]:
    """The Serve config with only ``args.index`` and ``args.retriever`` of the hoprag app replaced.

    Raises ``ValueError`` when the app is missing or the config asks for an auth token the pods
    do not get.
    """
    config = copy.deepcopy(serve_config)
    source = params.serving.config
    apps = [a for a in config.get("applications") or [] if isinstance(a, dict)]
    matches = [a for a in apps if a.get("name") == params.serving.app]
    if len(matches) != 1:
        names = ", ".join(str(a.get("name")) for a in apps) or "none"
        raise ValueError(
            f"serving.app: {source} has no single application {params.serving.app!r} (has: {names})"
        )
    args = matches[0].setdefault("args", {})
    if not isinstance(args, dict):
        raise ValueError(f"serving.app: the args of {params.serving.app!r} in {source} are not a mapping")
    args["index"] = params.serving.index
    args["retriever"] = params.serving.retriever
    token_env = (args.get("auth") or {}).get("token_env")
    if token_env == QA_TOKEN_ENV and params.secrets.qa_token is None:
        raise ValueError(
            f"secrets.qa_token: {source} requires a bearer token from ${QA_TOKEN_ENV} "
            "(auth.token_env); name the Secret that holds it"
        )
    if token_env and token_env not in (QA_TOKEN_ENV, *params.env):
        raise ValueError(
            f"serving.config: {source} reads its bearer token from ${token_env}, which no pod gets; "
            f"use {QA_TOKEN_ENV} (secrets.qa_token)"
        )
    return config


def render_rayservice(params: ClusterParams, serve_config: dict[str, Any]) -> dict[str, Any]:
    """The QA app as a RayService: ``serveConfigV2`` is the Serve config file with the path overrides."""
    serving = params.serving
    upgrade: dict[str, Any] = {"type": serving.upgrade_strategy}
    if serving.incremental_upgrade is not None:
        inc = serving.incremental_upgrade
        upgrade["clusterUpgradeOptions"] = {
            "gatewayClassName": inc.gateway_class_name,
            "stepSizePercent": inc.step_size_percent,
            "intervalSeconds": inc.interval_seconds,
            "maxSurgePercent": inc.max_surge_percent,
        }
    vllm_apps = [
        a.get("name", "?")
        for a in serve_config.get("applications", [])
        if str(a.get("import_path", "")).startswith("ray.serve.llm")
    ]
    images = params.images
    if vllm_apps and images.head != images.worker and not images.head_has_vllm:
        raise ValueError(
            f"{serving.config}: app(s) {', '.join(vllm_apps)} import ray.serve.llm, and Serve builds "
            f"applications on the head, whose image {images.head} has no vLLM. Use the worker image for "
            "the head (images.head = images.worker) or set images.head_has_vllm: true"
        )
    overridden = serve_config_with_overrides(params, serve_config)
    serve_text = (
        f"# {serving.config}, app {serving.app}: args.index and args.retriever set by the cluster params\n"
        + _dump(overridden)
    )
    return {
        "apiVersion": RAY_API_VERSION,
        "kind": "RayService",
        "metadata": _metadata(params, resource_names(params)["qa"], "qa"),
        "spec": {
            "upgradeStrategy": upgrade,
            "serveConfigV2": serve_text,
            "rayClusterConfig": ray_cluster_spec(params, "qa"),
        },
    }


# --------------------------------------------------------------------------- cluster launcher


def render_launcher(params: ClusterParams) -> dict[str, Any]:
    """A Ray cluster-launcher config for AWS: CPU head, the GPU worker type, the repo synced and installed.

    ``file_mounts`` syncs the checkout (``ray up`` runs from the repository root) onto
    ``images.project_dir`` inside the containers, and ``setup_commands`` installs it editable there,
    so ``ray rsync-up`` of a code change takes effect without rebuilding the image.
    """
    launcher, w = params.launcher, params.gpu_workers
    mount = params.storage.mount_path
    run_options = ["--ulimit nofile=65536:65536"]
    initialization: list[str] = []
    if launcher.efs_dns_name:
        # Host-level mount before Docker starts, then bind-mounted so containers see the same paths
        # as pods on Kubernetes.
        initialization = [
            "command -v mount.nfs4 >/dev/null || (sudo apt-get update -q && sudo apt-get install -yq nfs-common)",
            f"sudo mkdir -p {mount} && (mountpoint -q {mount} || sudo mount -t nfs4 -o "
            f"nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport "
            f"{launcher.efs_dns_name}:/ {mount})",
            # The image's `ray` user (uid 1000, group users) writes indexes and runs.
            f"sudo chown 1000:100 {mount}",
        ]
        run_options.append(f"-v {mount}:{mount}")
    provider: dict[str, Any] = {"type": "aws", "region": launcher.region, "cache_stopped_nodes": False}
    if launcher.availability_zone:
        provider["availability_zone"] = launcher.availability_zone

    def node_config(instance_type: str) -> dict[str, Any]:
        config: dict[str, Any] = {
            "InstanceType": instance_type,
            "BlockDeviceMappings": [
                {"DeviceName": "/dev/sda1", "Ebs": {"VolumeSize": launcher.disk_gb, "VolumeType": "gp3"}}
            ],
        }
        if launcher.image_id:
            config["ImageId"] = launcher.image_id
        return config

    head_resources = {} if params.head.schedule_work else {"CPU": 0}
    config: dict[str, Any] = {
        "cluster_name": params.name_prefix,
        "max_workers": w.max_replicas,
        "upscaling_speed": 1.0,
        "idle_timeout_minutes": launcher.idle_timeout_minutes,
        "provider": provider,
        "auth": {"ssh_user": launcher.ssh_user},
        "docker": {
            "image": params.images.worker,
            "container_name": "ray_container",
            "pull_before_run": True,
            "run_options": run_options,
        },
        "head_node_type": "ray.head.cpu",
        "available_node_types": {
            "ray.head.cpu": {
                "resources": head_resources,
                "node_config": node_config(launcher.head_instance_type),
            },
            f"ray.worker.{w.group_name}": {
                "min_workers": w.min_replicas,
                "max_workers": w.max_replicas,
                "resources": {"CPU": w.cpus, "GPU": w.gpus},
                "node_config": node_config(launcher.worker_instance_type),
            },
        },
        "file_mounts": {params.images.project_dir: "."},
        "rsync_exclude": ["**/.git", "**/.git/**"],
        "rsync_filter": [".gitignore"],
    }
    if initialization:
        config["initialization_commands"] = initialization
    config["setup_commands"] = [f"cd {params.images.project_dir} && pip install --quiet -e '.[vllm]'"]
    if params.ray_auth == "token":
        # `ray start` never creates a token; every node gets the same one from the launching machine
        # and starts in token mode (the launcher's default start commands, with RAY_AUTH_MODE set).
        config["file_mounts"]["~/.ray/auth_token"] = launcher.auth_token_file
        start = "export RAY_AUTH_MODE=token; ulimit -n 65536; ray start"
        config["head_start_ray_commands"] = [
            "ray stop",
            f"{start} --head --port=6379 --object-manager-port=8076 "
            "--autoscaling-config=~/ray_bootstrap_config.yaml --dashboard-host=0.0.0.0",
        ]
        config["worker_start_ray_commands"] = [
            "ray stop",
            f"{start} --address=$RAY_HEAD_IP:6379 --object-manager-port=8076",
        ]
    return config


# --------------------------------------------------------------------------- files


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings (serveConfigV2) as readable literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


def _dump(data: Any) -> str:
    # A wide line keeps every entrypoint on one line, as a person would type it.
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=4096, allow_unicode=True)


def load_serve_config(params: ClusterParams, repo_root: Path = REPO_ROOT) -> dict[str, Any]:
    """Read the Serve config file named by ``params.serving.config`` (relative to ``repo_root``)."""
    try:
        return read_yaml_mapping(repo_root / params.serving.config, "serving.config: Serve config")
    except ValueError as exc:
        raise ValueError(str(exc)) from None


def _check_stage_configs(params: ClusterParams, repo_root: Path) -> None:
    """Each RayJob's config file plus its ``--set`` overrides validate here as they will in the pod
    (the strict stage models refuse unknown keys), so a typo fails the render, not the job."""
    from evaluation.config import EvalConfig, default_systems
    from hoprag.config import load_config
    from indexing.config import IndexConfig
    from training.config import TrainConfig

    # The images hold the same repository, so a config missing here would be missing in the pods.
    named = {"index.config": params.index.config, "train.config": params.train.config}
    if params.eval.config is not None:
        named["eval.config"] = params.eval.config
    for field, rel in named.items():
        if not (repo_root / rel).is_file():
            raise ValueError(f"{field}: {rel} does not exist under {repo_root}")
    models: dict[Stage, type[BaseModel]] = {"index": IndexConfig, "train": TrainConfig, "eval": EvalConfig}
    for stage, model in models.items():
        argv = stage_argv(params, stage)
        sets = [argv[i + 1] for i, word in enumerate(argv) if word == "--set"]
        rel = named.get(f"{stage}.config")
        base = None
        if rel is None:  # eval with --index: the command builds the benchmarks and systems itself
            base = {
                "benchmarks": [{"name": f"index-{i}", "index": p} for i, p in enumerate(params.eval.index)],
                "systems": [s.model_dump(mode="json") for s in default_systems(params.eval.retriever)],
                "out": params.eval.out,
            }
        try:
            load_config(model, repo_root / rel if rel else None, sets, base=base)
        except ValueError as exc:
            raise ValueError(f"{stage}: the RayJob's config and overrides do not validate: {exc}") from None


def _check_app_args(params: ClusterParams, serve_config: dict[str, Any]) -> None:
    """The hoprag app's args (after the path overrides) are valid QA app settings."""
    from pydantic import ValidationError

    from hoprag.config import describe_errors
    from serving.settings import QAAppSettings

    apps = serve_config.get("applications") or []
    args = next(a["args"] for a in apps if isinstance(a, dict) and a.get("name") == params.serving.app)
    try:
        QAAppSettings.model_validate(args)
    except ValidationError as exc:
        raise ValueError(
            f"serving.config: the args of {params.serving.app!r} in {params.serving.config}: "
            f"{describe_errors(QAAppSettings, exc)}"
        ) from None


def render_all(
    params: ClusterParams,
    *,
    params_path: str = DEFAULT_PARAMS,
    out: str = DEFAULT_OUT,
    repo_root: Path = REPO_ROOT,
) -> dict[str, str]:
    """Every rendered file: relative name (under ``out``) → text starting with the rendered-by header.

    ``params_path`` and ``out`` only appear in the header (the command that reproduces the files).
    """
    _check_stage_configs(params, repo_root)
    serve_config = load_serve_config(params, repo_root)
    _check_app_args(params, serve_config_with_overrides(params, serve_config))
    header = HEADER.format(params=params_path, out=out)
    documents: dict[str, tuple[str, dict[str, Any]]] = {
        "manifests/raycluster.yaml": ("kubectl apply -f {path}", render_raycluster(params)),
        **{
            f"manifests/rayjob-{stage}.yaml": (
                # A finished RayJob does not run again on apply: replace it.
                "kubectl delete -f {path} --ignore-not-found && kubectl create -f {path}",
                render_rayjob(params, stage),
            )
            for stage in JOB_STAGES
        },
        "manifests/rayservice.yaml": ("kubectl apply -f {path}", render_rayservice(params, serve_config)),
        "launcher/aws-gpu.yaml": (
            "ray up {path}   (from the repository root: file_mounts syncs the checkout)",
            render_launcher(params),
        ),
    }
    # On a launcher cluster the same commands are submitted with `hoprag submit` (`ray dashboard`
    # forwards 8265; the image already holds the project, so nothing is uploaded). Evaluation is
    # left out: its example LLM endpoint is the RayService's in-cluster address.
    submit = [
        "# then: hoprag submit --address http://127.0.0.1:8265 --no-working-dir --wait -- "
        + shlex.join(stage_argv(params, s)[1:])
        for s in ("index", "train")
    ]
    files = {}
    for name, (how, doc) in documents.items():
        lines = [header, "# " + how.format(path=f"{out}/{name}")]
        if name.startswith("launcher/"):
            lines += submit
        files[name] = "\n".join(lines) + "\n" + _dump(doc)
    return files


def _stale(files: dict[str, str], out_dir: Path) -> list[str]:
    # Rendered files (they carry the header) that the current render no longer produces.
    stale = []
    for folder in RENDERED_DIRS:
        for path in sorted((out_dir / folder).glob("*.yaml")):
            name = path.relative_to(out_dir).as_posix()
            if name not in files and path.read_text(encoding="utf-8").startswith("# Rendered by: hoprag"):
                stale.append(name)
    return stale


def write_rendered(files: dict[str, str], out_dir: str | Path) -> list[Path]:
    """Write ``files`` under ``out_dir`` (creating folders), delete stale rendered files; returns paths written."""
    out_dir = Path(out_dir)
    for name in _stale(files, out_dir):
        (out_dir / name).unlink()
    written = []
    for name, text in files.items():
        path = out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def check_rendered(files: dict[str, str], out_dir: str | Path) -> list[str]:
    """Names (relative to ``out_dir``) of files that are missing, differ from ``files`` or are stale."""
    out_dir = Path(out_dir)
    drifted = []
    for name, text in files.items():
        path = out_dir / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            drifted.append(name)
    return drifted + _stale(files, out_dir)
