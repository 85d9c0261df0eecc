"""Cluster deployment of hoprag: KubeRay manifests and a Ray cluster-launcher YAML, rendered from one
parameter file (``hoprag cluster render``). See ``cluster/README.md``."""

# Where `hoprag cluster render` reads and writes by default (paths relative to the repository root).
DEFAULT_PARAMS = "cluster/params/example.yaml"
DEFAULT_OUT = "cluster"
