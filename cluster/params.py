"""Typed parameters of a hoprag deployment: one YAML file holds everything the KubeRay manifests and
the cluster-launcher YAML need (images, resources, shared storage, secrets, per-stage settings).

``load_params(path)`` reads and validates such a file; every error names the file and the field.
Stage settings (LLM, batch sizes, hyperparameters) stay in the stage config files
(``indexing/configs``, ``training/configs``, ``evaluation/configs``, ``serving/config``); the
params only say which file each stage uses and where its inputs and outputs live.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from hoprag.config import read_yaml_mapping

# Environment variables the secrets become in every Ray container: the names the stage configs
# already read (indexing/configs/openai-endpoint.yaml, serving/config/gpu-vllm.yaml's auth).
LLM_API_KEY_ENV = "OPENAI_API_KEY"
QA_TOKEN_ENV = "HOPRAG_TOKEN"

# Kubernetes resource quantities (the CRDs' pattern, restricted to what a person writes by hand).
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_SECRET_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_URI = re.compile(r"^[a-z][a-z0-9+.-]*://[^/\s]+(/\S*)?$")


class _Params(BaseModel):
    # Unknown keys are typos in a hand-written file: refuse them instead of silently rendering defaults.
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_quantity(value: str) -> str:
    if not _QUANTITY.match(value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity such as 32Gi or 64G")
    return value


def _check_overrides(overrides: list[str]) -> list[str]:
    from hoprag.config import ConfigError, parse_override

    for item in overrides:
        try:
            parse_override(item)
        except ConfigError as exc:
            raise ValueError(str(exc)) from exc
    return overrides


def _check_stage_config(value: str) -> str:
    p = PurePosixPath(value)
    if p.is_absolute() or ".." in p.parts or p.suffix not in (".yaml", ".yml"):
        raise ValueError(
            f"{value!r} must be a .yaml file relative to the repository root, e.g. indexing/configs/vllm-gpu.yaml"
        )
    return value


Quantity = Annotated[str, AfterValidator(_check_quantity)]
StageConfig = Annotated[str, AfterValidator(_check_stage_config)]
Overrides = Annotated[list[str], AfterValidator(_check_overrides)]


class ImagesParams(_Params):
    """Container images; both are the project image (hoprag installed) on top of rayproject/ray."""

    head: str = Field(
        min_length=1,
        description="Image of the head pods (CPU), e.g. built FROM rayproject/ray:2.60.0-py311 "
        "with cluster/Dockerfile.",
    )
    worker: str = Field(
        min_length=1,
        description="Image of the GPU worker pods and of the cluster-launcher nodes, e.g. built FROM "
        "rayproject/ray:2.60.0-py311-gpu with cluster/Dockerfile (extra 'vllm').",
    )
    head_has_vllm: bool = Field(
        default=False,
        description="The head image includes the 'vllm' extra. Serve builds applications on the head, "
        "so a RayService whose Serve config has a ray.serve.llm app needs vLLM there: rendering refuses "
        "it unless the head uses the worker image or this is true.",
    )
    pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field(
        default="IfNotPresent", description="imagePullPolicy of every Ray container."
    )
    project_dir: str = Field(
        default="/home/ray/hoprag",
        description="Where the images hold the repository (cluster/Dockerfile's WORKDIR). Stage config "
        "files are passed to the hoprag CLI as absolute paths under it, so they do not depend on the "
        "working directory Ray gives a job's driver.",
    )

    @field_validator("project_dir")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not PurePosixPath(value).is_absolute():
            raise ValueError(f"{value!r} must be an absolute path inside the image")
        return value.rstrip("/") or "/"


class HeadParams(_Params):
    """The head pod. It runs GCS, the dashboard, job drivers and the Serve controller, no tasks."""

    cpus: int = Field(ge=1, description="CPU request and limit of the head container.")
    memory: Quantity = Field(description="Memory request and limit, a Kubernetes quantity (e.g. 32Gi).")
    schedule_work: bool = Field(
        default=False,
        description="Advertise the head's CPUs to Ray. Off by default (num-cpus '0'): tasks and "
        "actors land on workers, so the head's memory stays for GCS, drivers and Serve's controller.",
    )


class GPUWorkerParams(_Params):
    """The one autoscaling GPU worker group (KubeRay pods; cluster-launcher nodes get the same Ray resources)."""

    group_name: str = Field(default="gpu", description="workerGroupSpecs[].groupName (a DNS-1123 label).")
    min_replicas: int = Field(default=0, ge=0, description="Pods the autoscaler never goes below.")
    max_replicas: int = Field(ge=1, description="Pods the autoscaler never goes above.")
    gpus: int = Field(default=1, ge=1, description="GPUs per worker pod (limit of gpu_resource).")
    cpus: int = Field(ge=1, description="CPUs per worker pod (request and limit).")
    memory: Quantity = Field(description="Memory per worker pod (request and limit), e.g. 96Gi.")
    gpu_resource: str = Field(
        default="nvidia.com/gpu", description="Extended resource name of the GPUs (device plugin)."
    )
    idle_timeout_seconds: int = Field(
        default=300,
        ge=0,
        description="Seconds an idle worker waits before the autoscaler removes it (GPUs are costly; "
        "long enough that a Serve upscale or the next job stage can reuse it).",
    )
    node_selector: dict[str, str] = Field(
        default_factory=dict, description="nodeSelector of the worker pods (e.g. an accelerator label)."
    )
    tolerations: list[dict[str, Any]] = Field(
        default_factory=lambda: [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        description="Tolerations of the worker pods; the default tolerates the usual GPU-node taint.",
    )

    @field_validator("group_name")
    @classmethod
    def _label(cls, value: str) -> str:
        if not _DNS1123_LABEL.match(value) or len(value) > 30:
            raise ValueError(f"{value!r} must be a DNS-1123 label of at most 30 characters")
        return value

    @model_validator(mode="after")
    def _replicas(self) -> GPUWorkerParams:
        if self.max_replicas < self.min_replicas:
            raise ValueError(
                f"max_replicas ({self.max_replicas}) must be at least min_replicas ({self.min_replicas})"
            )
        return self


class StorageParams(_Params):
    """Shared storage every pod mounts: corpus, index, training runs and evaluations live on it."""

    claim_name: str = Field(
        description="An existing ReadWriteMany PersistentVolumeClaim (EFS, Filestore, CephFS, NFS, ...) "
        "in the namespace."
    )
    mount_path: str = Field(default="/mnt/shared", description="Where every Ray container mounts the claim.")
    object_store_prefix: str | None = Field(
        default=None,
        description="Optional object-store URI prefix (e.g. s3://bucket/hoprag). hoprag reads corpora and "
        "indexes from local paths only, so it is used where hoprag takes URIs: Ray Train's checkpoint "
        "storage (PREFIX/ray-train/RUN_NAME), which then outlives the volume.",
    )

    @field_validator("claim_name")
    @classmethod
    def _claim(cls, value: str) -> str:
        if not _DNS1123_LABEL.match(value):
            raise ValueError(f"{value!r} is not a valid PersistentVolumeClaim name")
        return value

    @field_validator("mount_path")
    @classmethod
    def _mount(cls, value: str) -> str:
        p = PurePosixPath(value)
        if not p.is_absolute() or ".." in p.parts or p == PurePosixPath("/"):
            raise ValueError(f"{value!r} must be an absolute directory other than /")
        return str(p)

    @field_validator("object_store_prefix")
    @classmethod
    def _prefix(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not _URI.match(value):
            raise ValueError(f"{value!r} is not a URI such as s3://bucket/hoprag")
        return value.rstrip("/")


class SecretRef(_Params):
    """One key of a Kubernetes Secret (never the value: secrets stay out of the repository)."""

    name: str = Field(description="Secret name in the namespace.")
    key: str = Field(description="Key inside the Secret.")
    optional: bool = Field(
        default=False,
        description="Start pods even when the Secret or key is missing (the variable is then unset).",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _DNS1123_LABEL.match(value):
            raise ValueError(f"{value!r} is not a valid Secret name")
        return value

    @field_validator("key")
    @classmethod
    def _key(cls, value: str) -> str:
        if not _SECRET_KEY.match(value):
            raise ValueError(f"{value!r} is not a valid Secret key")
        return value


class SecretsParams(_Params):
    """Secrets exposed as environment variables in every Ray container."""

    llm_api_key: SecretRef | None = Field(
        default=None,
        description=f"API key of an OpenAI-compatible LLM endpoint, exposed as {LLM_API_KEY_ENV}.",
    )
    qa_token: SecretRef | None = Field(
        default=None,
        description=f"Bearer token the QA app requires (auth.token_env), exposed as {QA_TOKEN_ENV}.",
    )


class _JobParams(_Params):
    ttl_seconds_after_finished: int = Field(
        default=600,
        ge=0,
        description="Seconds the job's RayCluster stays after the job ends (time to read its logs).",
    )
    backoff_limit: int = Field(
        default=1,
        ge=0,
        description="RayJob retries, each on a fresh RayCluster. Cheap here: every stage resumes "
        "(indexing from its extraction cache, training from its latest checkpoint, evaluation from "
        "stored results).",
    )
    active_deadline_seconds: int | None = Field(
        default=None, ge=1, description="Fail the RayJob after this many seconds (None: no deadline)."
    )
    overrides: Overrides = Field(
        default_factory=list,
        description="Extra `--set key.sub=value` overrides of the stage config (applied last, so they win).",
    )


class IndexJobParams(_JobParams):
    """`hoprag index` as a RayJob."""

    corpus: str = Field(description="Corpus on the shared volume (GFM-RAG raw dir, .json, .jsonl, .parquet).")
    out: str = Field(description="Index directory on the shared volume (re-running resumes).")
    config: StageConfig = Field(default="indexing/configs/vllm-gpu.yaml", description="Indexing config file.")


class TrainJobParams(_JobParams):
    """`hoprag train` as a RayJob: N GPU workers, checkpoints in the run directory."""

    index: str = Field(description="Index directory (with processed questions) on the shared volume.")
    out: str = Field(
        description="Run directory on the shared volume: checkpoints and the exported retriever. Re-running "
        "(or a RayJob retry) resumes from its latest checkpoint."
    )
    config: StageConfig = Field(
        default="training/configs/glm-t5-large-gpu.yaml", description="Training config file."
    )
    workers: int = Field(default=8, ge=1, description="Ray Train workers, one GPU each (--workers).")


class EvalJobParams(_JobParams):
    """`hoprag eval run` as a RayJob: either a config file, or indexes + retriever + out."""

    config: StageConfig | None = Field(default=None, description="Evaluation config file (--config).")
    index: list[str] = Field(
        default_factory=list, description="Index directories on the shared volume (--index, repeatable)."
    )
    retriever: str | None = Field(
        default=None,
        description="GLM / GNN retriever or run directory on the shared volume (--retriever); 'A+B' fuses two.",
    )
    out: str | None = Field(
        default=None, description="Evaluation directory on the shared volume (--out; required with index)."
    )
    limit: int | None = Field(default=None, ge=1, description="First N questions per benchmark (--limit).")

    @model_validator(mode="after")
    def _one_mode(self) -> EvalJobParams:
        if (self.config is None) == (not self.index):
            raise ValueError("give either 'config' or 'index' (with 'out'), not both and not neither")
        if self.index and self.out is None:
            raise ValueError("'index' needs 'out' (the evaluation directory)")
        if self.config is not None and (self.retriever is not None or self.limit is not None):
            raise ValueError("'retriever' and 'limit' go with 'index'; with 'config' set them in the config")
        return self


class IncrementalUpgradeParams(_Params):
    """spec.upgradeStrategy.clusterUpgradeOptions (NewClusterWithIncrementalUpgrade; needs Gateway API)."""

    gateway_class_name: str = Field(min_length=1)
    step_size_percent: int = Field(ge=1, le=100)
    interval_seconds: int = Field(ge=1)
    max_surge_percent: int = Field(default=100, ge=1, le=100)


class ServingParams(_Params):
    """The QA app as a RayService: the project's Serve config with only the paths overridden."""

    config: StageConfig = Field(
        default="serving/config/gpu-vllm.yaml",
        description="Serve config file, embedded as serveConfigV2 (so the manifest never drifts from it).",
    )
    app: str = Field(default="hoprag", description="Name of the hoprag QA application in that file.")
    index: str = Field(description="Replaces the app's args.index: the index on the shared volume.")
    retriever: str = Field(
        description="Replaces the app's args.retriever: a GLM / GNN run directory on the shared volume, 'dense', "
        "or 'A+B' (two fused).",
    )
    upgrade_strategy: Literal["NewCluster", "NewClusterWithIncrementalUpgrade", "None"] = Field(
        default="NewCluster",
        description="spec.upgradeStrategy.type. NewCluster: a changed rayClusterConfig starts a second "
        "cluster and switches traffic once its apps are healthy (no downtime, 2x resources during the "
        "switch). Serve-config-only changes are applied in place under every strategy.",
    )
    incremental_upgrade: IncrementalUpgradeParams | None = Field(
        default=None, description="Required with NewClusterWithIncrementalUpgrade, refused otherwise."
    )

    @model_validator(mode="after")
    def _incremental(self) -> ServingParams:
        wants = self.upgrade_strategy == "NewClusterWithIncrementalUpgrade"
        if wants != (self.incremental_upgrade is not None):
            raise ValueError(
                "incremental_upgrade is required with upgrade_strategy NewClusterWithIncrementalUpgrade "
                "and refused with any other strategy"
            )
        return self


class LauncherParams(_Params):
    """The Ray cluster-launcher YAML (AWS): a CPU head and the GPU worker type."""

    region: str = Field(default="us-west-2")
    availability_zone: str | None = Field(default=None, description="e.g. us-west-2a,us-west-2b")
    head_instance_type: str = Field(default="m6i.2xlarge")
    worker_instance_type: str = Field(
        description="EC2 type of the GPU workers; gpu_workers.gpus/cpus are the Ray resources each advertises."
    )
    disk_gb: int = Field(default=300, ge=50, description="Root EBS volume per node (images, model weights).")
    image_id: str | None = Field(
        default=None, description="AMI; None lets Ray pick its Deep Learning AMI for the region."
    )
    ssh_user: str = Field(default="ubuntu")
    efs_dns_name: str | None = Field(
        default=None,
        description="EFS file system mounted at storage.mount_path on every node and into the containers, "
        "so jobs see the same paths as on Kubernetes (None: no shared storage).",
    )
    idle_timeout_minutes: int = Field(default=5, ge=1)
    auth_token_file: str = Field(
        default="~/.ray/auth_token",
        description="Local file with the Ray token (create it with `ray get-auth-token --generate`); with "
        "ray_auth: token it is synced to every node and Ray starts in token mode. `hoprag submit` "
        "reads the same file.",
    )


class ClusterParams(_Params):
    """Everything the KubeRay manifests and the cluster-launcher YAML are rendered from."""

    namespace: str = Field(default="hoprag", description="Kubernetes namespace of every resource.")
    name_prefix: str = Field(
        default="hoprag",
        description="Resource names: PREFIX (RayCluster), PREFIX-index/-train/-eval (RayJobs), PREFIX-qa "
        "(RayService), PREFIX (launcher cluster_name).",
    )
    ray_version: str = Field(
        default="2.60.0", description="spec.rayVersion; must match the Ray inside the images."
    )
    ray_auth: Literal["token", "disabled"] = Field(
        default="token",
        description="spec.authOptions.mode of every Ray cluster. token: KubeRay (>= 1.5.1) generates a "
        "token Secret and gives it to every Ray container, so the dashboard and job API (which run "
        "arbitrary code) refuse unauthenticated callers; fetch it to use `ray job submit`.",
    )
    images: ImagesParams
    head: HeadParams
    gpu_workers: GPUWorkerParams
    storage: StorageParams
    secrets: SecretsParams = Field(default_factory=SecretsParams)
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Extra environment of every Ray container (e.g. HF_HOME on the shared volume).",
    )
    index: IndexJobParams
    train: TrainJobParams
    eval: EvalJobParams
    serving: ServingParams
    launcher: LauncherParams

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not _DNS1123_LABEL.match(value) or len(value) > 63:
            raise ValueError(f"{value!r} is not a valid namespace (DNS-1123 label)")
        return value

    @field_validator("name_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        # KubeRay derives pod, service and submitter-job names from these; keep room for its suffixes.
        if not _DNS1035_LABEL.match(value) or len(value) > 30:
            raise ValueError(
                f"{value!r} must start with a letter, hold only a-z, 0-9 and '-', and be at most 30 characters"
            )
        return value

    @field_validator("ray_version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not re.fullmatch(r"\d+\.\d+\.\d+", value):
            raise ValueError(f"{value!r} is not a Ray release such as 2.60.0")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid environment variable name")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ClusterParams:
        from hoprag.retrieval.loading import retriever_spec_parts  # the spec grammar serving reads

        secret_env = {
            LLM_API_KEY_ENV: self.secrets.llm_api_key,
            QA_TOKEN_ENV: self.secrets.qa_token,
        }
        clash = sorted(name for name, ref in secret_env.items() if ref is not None and name in self.env)
        if clash:
            raise ValueError(f"env: {', '.join(clash)} come from secrets; do not set them in env too")
        mount = PurePosixPath(self.storage.mount_path)
        paths: list[tuple[str, str | None]] = [
            ("index.corpus", self.index.corpus),
            ("index.out", self.index.out),
            ("train.index", self.train.index),
            ("train.out", self.train.out),
            *((f"eval.index[{i}]", p) for i, p in enumerate(self.eval.index)),
            ("eval.retriever", self.eval.retriever),
            ("eval.out", self.eval.out),
            ("serving.index", self.serving.index),
            ("serving.retriever", self.serving.retriever),
        ]
        for field, value in paths:
            if value is None:
                continue
            if not field.endswith("retriever"):
                _check_shared_path(field, value, mount)
                continue
            try:
                parts = retriever_spec_parts(value)  # 'A+B' fuses two retrievers
            except ValueError as exc:
                raise ValueError(f"{field}: {exc}") from exc
            for part in parts:
                if part != "dense":
                    _check_shared_path(field, part, mount)
        capacity = self.gpu_workers.max_replicas * self.gpu_workers.gpus
        if self.train.workers > capacity:
            raise ValueError(
                f"train.workers ({self.train.workers}) needs one GPU each, but gpu_workers offer at most "
                f"{capacity} (max_replicas {self.gpu_workers.max_replicas} x gpus {self.gpu_workers.gpus})"
            )
        return self


def _check_shared_path(field: str, value: str, mount: PurePosixPath) -> None:
    if "://" in value:
        raise ValueError(
            f"{field}: {value!r} is a URI, but hoprag reads and writes these as local paths; put it on the "
            f"shared volume ({mount})"
        )
    p = PurePosixPath(value)
    if not p.is_absolute() or ".." in p.parts:
        raise ValueError(f"{field}: {value!r} must be an absolute path without '..'")
    if mount not in p.parents:
        raise ValueError(
            f"{field}: {value} is not on the shared volume mounted at {mount} (the only storage every pod sees)"
        )


def _describe(exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        where = ".".join(str(part) for part in err["loc"])
        if err["type"] == "extra_forbidden":
            message = "unknown field"
        elif err["type"] == "missing":
            message = "required field is missing"
        else:
            message = err["msg"].removeprefix("Value error, ")
        # Cross-field checks already name their fields; a bare location adds nothing to those.
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)


def parse_params(data: Any, source: str = "<params>") -> ClusterParams:
    """Validate already-loaded parameter data; a ``ValueError`` names ``source`` and each bad field."""
    if not isinstance(data, dict):
        raise ValueError(f"{source}: cluster params must be a mapping at the top level")
    try:
        return ClusterParams.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{source}: invalid cluster params: {_describe(exc)}") from exc


def load_params(path: str | Path) -> ClusterParams:
    """Read and validate a cluster parameter file (e.g. ``cluster/params/example.yaml``).

    Raises ``ValueError`` with a one-line message naming the file and the offending field(s).
    """
    return parse_params(read_yaml_mapping(path, "cluster params file"), str(path))
