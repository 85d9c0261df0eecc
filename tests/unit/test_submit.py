"""`hoprag submit`'s pure parts: the entrypoint, the runtime_env, the token lookup, CLI errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.submit import (
    WORKING_DIR_EXCLUDES,
    SubmitError,
    SubmitOptions,
    build_entrypoint,
    build_runtime_env,
    default_submission_id,
    project_root,
    ray_auth_token,
)
from hoprag_cli import main, parse_command


def test_entrypoint_is_the_checked_hoprag_command() -> None:
    command = ["index", "--corpus", "s3://bucket/corpus dir", "--out", "/mnt/shared/index"]
    assert build_entrypoint(command, check=parse_command) == (
        "python -m hoprag_cli index --corpus 's3://bucket/corpus dir' --out /mnt/shared/index"
    )
    assert build_entrypoint(["hoprag", *command], python="python3.11").startswith(
        "python3.11 -m hoprag_cli index"
    )
    assert build_entrypoint(["index", "stats", "/mnt/shared/index"]).endswith("index stats /mnt/shared/index")
    with pytest.raises(SubmitError, match="not a valid hoprag command"):
        build_entrypoint(["index", "--no-such-flag"], check=parse_command)
    assert build_entrypoint(["index", "--no-such-flag"]).endswith("--no-such-flag")  # no check given
    with pytest.raises(SubmitError, match="cannot itself be 'submit'"):
        build_entrypoint(["submit", "--address", "http://x:8265", "--", "index", "--out", "o"])
    with pytest.raises(SubmitError, match="after '--'"):
        build_entrypoint([])


def test_runtime_env_merges_the_file_with_the_options(tmp_path: Path) -> None:
    options = SubmitOptions(
        address="http://head:8265",
        working_dir=tmp_path,
        pip=["vllm>=0.10"],
        image_uri="ghcr.io/acme/hoprag:1",
        env_vars={"HF_HOME": "/mnt/shared/hf"},
        runtime_env={"env_vars": {"A": "1", "HF_HOME": "/tmp"}, "excludes": ["data/"]},
    )
    env = build_runtime_env(options)
    assert env["working_dir"] == str(tmp_path) and env["pip"] == ["vllm>=0.10"]
    assert env["image_uri"] == "ghcr.io/acme/hoprag:1"
    assert env["env_vars"] == {"A": "1", "HF_HOME": "/mnt/shared/hf"}  # options win over the file
    assert set(env["excludes"]) == {"data/", *WORKING_DIR_EXCLUDES}
    with pytest.raises(SubmitError, match="does not exist"):
        build_runtime_env(SubmitOptions(address="http://h:8265", working_dir=tmp_path / "missing"))
    assert build_runtime_env(SubmitOptions(address="http://h:8265")) == {}


def test_token_lookup_follows_ray(tmp_path: Path, monkeypatch) -> None:
    for var in ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ray_auth_token() is None
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("from-home\n")
    assert ray_auth_token() == "from-home"
    (tmp_path / "tok").write_text("from-path")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "tok"))
    assert ray_auth_token() == "from-path"
    monkeypatch.setenv("RAY_AUTH_TOKEN", "from-env")
    assert ray_auth_token() == "from-env"
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert ray_auth_token() is None


def test_submission_ids_and_project_root() -> None:
    job_id = default_submission_id(["hoprag", "train", "--index", "i"])
    assert job_id.startswith("hoprag-train-") and job_id != default_submission_id(["train"])
    root = project_root()
    assert root is not None and (root / "hoprag_cli" / "__init__.py").is_file()


def test_cli_refuses_bad_submissions_before_contacting_a_cluster(capsys, monkeypatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("RAY_API_SERVER_ADDRESS", raising=False)
    assert main(["submit", "--", "index", "--out", "o"]) == 2
    assert "--address" in capsys.readouterr().err
    url = "http://127.0.0.1:9"  # nothing listens on the discard port
    assert main(["submit", "--address", url, "--env", "NOEQUALS", "--", "index", "--out", "o"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert (
        main(["submit", "--address", url, "--entrypoint-resources", "{bad", "--", "index", "--out", "o"]) == 2
    )
    assert "not JSON" in capsys.readouterr().err
    assert main(["submit", "--address", url, "--", "index", "--out", "o"]) == 2
    assert "cannot reach the Ray job server" in capsys.readouterr().err
    # The command is checked before the cluster is contacted.
    assert main(["submit", "--address", url, "--", "index", "--bogus"]) == 2
    assert "not a valid hoprag command" in capsys.readouterr().err


def test_every_hoprag_command_in_the_runbook_parses() -> None:
    """docs/cluster.md's hoprag commands are valid for this hoprag (flags renamed → this fails)."""
    import re
    import shlex

    from hoprag_cli import build_parser, rewrite_argv

    text = (Path(__file__).resolve().parents[2] / "docs" / "cluster.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    commands = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["hoprag"]:
                commands.append(words[1:])
    assert len(commands) >= 9
    for argv in commands:
        build_parser().parse_args(rewrite_argv(argv))  # exits (fails the test) on a bad command
        if argv[0] == "submit":
            build_entrypoint(argv[argv.index("--") + 1 :], check=parse_command)


def test_relative_output_paths_are_flagged() -> None:
    from cluster.submit import relative_outputs

    assert relative_outputs(["index", "--corpus", "c", "--out", "runs/x"]) == ["runs/x"]
    assert relative_outputs(["train", "--out", "/mnt/shared/glm", "--index", "i"]) == []
    assert relative_outputs(["demo", "--workdir", "s3://bucket/demo"]) == []


def test_losing_the_job_server_after_submission_is_a_clear_error(monkeypatch) -> None:
    import cluster.submit as S

    class Client:
        def submit_job(self, **kwargs):
            return kwargs["submission_id"]

        def get_job_status(self, job_id):
            raise ConnectionError("connection refused")

    monkeypatch.setattr(S, "connect", lambda address: Client())
    monkeypatch.setenv("RAY_AUTH_TOKEN", "t")
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    options = SubmitOptions(address="http://head:8265", submission_id="j1")
    with pytest.raises(
        SubmitError, match=r"lost contact .* job j1 keeps running: RAY_AUTH_MODE=token ray job"
    ):
        S.run_submit(options, ["index", "--out", "/o"], wait=True, follow=False)


class _AgentlessHead:
    """A job client whose head answers Ray's "no agent" 500 ``refusals`` times, then accepts."""

    def __init__(
        self, refusals: int, message: str = "No available agent to submit job, please try again later"
    ):
        self.refusals = refusals
        self.message = message
        self.calls = 0

    def submit_job(self, **kwargs):
        self.calls += 1
        if self.calls <= self.refusals:
            raise RuntimeError(f"Request failed with status code 500: {self.message}.")
        return kwargs["submission_id"]


def test_a_head_without_a_job_agent_yet_is_retried_with_backoff() -> None:
    import io

    from cluster.submit import submit

    waits: list[float] = []
    out = io.StringIO()
    head = _AgentlessHead(refusals=2)
    job = submit(head, {"submission_id": "j1"}, backoff_s=(1.0, 2.0, 4.0), sleep=waits.append, out=out)
    assert job == "j1" and head.calls == 3 and waits == [1.0, 2.0]
    assert out.getvalue().count("no job agent yet") == 2


def test_a_head_that_never_gets_a_job_agent_says_what_to_check() -> None:
    from cluster.submit import submit

    waits: list[float] = []
    head = _AgentlessHead(refusals=100)
    with pytest.raises(SubmitError, match=r"still has no job agent after 3 s.*dashboard_agent\.log.*52365"):
        submit(head, {"submission_id": "j1"}, backoff_s=(1.0, 2.0), sleep=waits.append)
    assert head.calls == 3 and waits == [1.0, 2.0]  # bounded: one try per wait, plus the first


def test_other_refusals_are_not_retried() -> None:
    from cluster.submit import submit

    head = _AgentlessHead(refusals=1, message="Job with submission_id j1 already exists")
    with pytest.raises(SubmitError, match=r"refused the job: .*already exists"):
        submit(head, {"submission_id": "j1"}, backoff_s=(1.0,), sleep=lambda s: pytest.fail("retried"))
    assert head.calls == 1
