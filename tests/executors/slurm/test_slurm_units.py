"""The slurm executor as data: batch script, options, scheduler output, secrets, srun argv.

No cluster needed (test_slurm_cluster.py runs the real one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from inferx_core import hookimpl
from inferx_core.config.models import RunConfig
from inferx_core.errors import UserFacingError
from inferx_core.executors.jobs import (
    SECRET_ENV_PREFIX,
    JobUnit,
    manifest_data,
    plan_units,
    restore_secrets,
    run_job,
    secret_environment,
    split_secrets,
)
from inferx_core.executors.registry import executors, get_executor
from inferx_core.executors.slurm import (
    JobGroup,
    SlurmExecutor,
    SlurmOptions,
    job_state,
    log_path_for,
    parse_array_tasks,
    parse_sacct,
    parse_squeue,
    render_script,
)
from inferx_core.launch.srun import SrunLauncher, srun_argv
from inferx_core.sdk.executor import ExecutorError, ExecutorInfo
from inferx_core.sdk.launch_spec import LaunchSpec, Mount
from inferx_core.sdk.manager import get_plugin_manager

SECRET = "hf_unit_secret_value_13"


def cfg(**overrides: Any) -> RunConfig:
    data: dict[str, Any] = {"engine": "vllm", "model": "org/m", "load": {"concurrency": [1, 4]}}
    data.update(overrides)
    return RunConfig.model_validate(data)


def unit(index: int = 0, **overrides: Any) -> JobUnit:
    c = cfg(**overrides)
    return JobUnit(index, f"s{index}", c, Path("/shared/out"), ["p1", "p2"], ["p2"])


# -- scheduler output -----------------------------------------------------------------------------
def test_job_states_map_slurm_words() -> None:
    assert job_state("PENDING") == "pending"
    assert job_state("COMPLETING") == "running"
    assert job_state("COMPLETED") == "done"
    assert job_state("CANCELLED by 0") == "cancelled"
    for word in ("FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED"):
        assert job_state(word) == "failed"
    assert job_state("SOMETHING_NEW") == "unknown"


def test_parse_squeue_expands_pending_array_ranges() -> None:
    text = "\n".join(
        [
            "12_[2-4%2]|12|2-4%2|PENDING|JobArrayTaskLimit|",
            "13_0|12|0|RUNNING|None|node1",
            "14_1|12|1|COMPLETED|None|node2",
            "20|20|N/A|FAILED|NonZeroExitCode|node1",
            "garbage",
        ]
    )
    rows = parse_squeue(text)
    assert rows["12_0"] == ("RUNNING", "", "node1")
    assert rows["12_1"] == ("COMPLETED", "", "node2")
    assert rows["12_3"] == ("PENDING", "JobArrayTaskLimit", "")
    assert set(rows) == {"12_0", "12_1", "12_2", "12_3", "12_4", "20"}
    assert rows["20"] == ("FAILED", "NonZeroExitCode", "node1")
    assert parse_array_tasks("[0,3-4]") == [0, 3, 4]
    assert parse_array_tasks("x") == []


def test_parse_sacct() -> None:
    rows = parse_sacct("7_1|CANCELLED by 0|0:15|node3\n8|COMPLETED|0:0|node1\n")
    assert rows == {"7_1": ("CANCELLED by 0", "0:15", "node3"), "8": ("COMPLETED", "0:0", "node1")}


def test_log_path_for_single_jobs_and_array_tasks() -> None:
    assert log_path_for("/j/logs/x-0-%j.log", "77") == Path("/j/logs/x-0-77.log")
    assert log_path_for("/j/logs/x-0-%A_%a.log", "77_3") == Path("/j/logs/x-0-77_3.log")


# -- options and the batch script -----------------------------------------------------------------
def test_options_from_mapping_convert_and_reject() -> None:
    opts = SlurmOptions.from_mapping(
        {
            "partition": "gpu",
            "gpus_per_node": "8",
            "container_mounts": "/a:/a,/b:/b:ro",
            "sbatch_args": "--exclusive --qos=high",
            "max_parallel": "2",
        }
    )
    assert opts.gpus_per_node == 8 and opts.max_parallel == 2
    assert opts.container_mounts == ["/a:/a", "/b:/b:ro"]
    assert opts.sbatch_args == ["--exclusive", "--qos=high"]
    with pytest.raises(ExecutorError, match=r"unknown slurm executor option.*partion"):
        SlurmOptions.from_mapping({"partion": "gpu"})
    with pytest.raises(ExecutorError, match="one word"):
        SlurmOptions.from_mapping({"partition": "gpu\n#SBATCH --x"})
    with pytest.raises(ExecutorError, match="spans lines"):
        SlurmOptions.from_mapping({"sbatch_args": ["--a\n--b"]})


def test_script_has_every_directive_and_runs_the_job_entry(tmp_path: Path) -> None:
    opts = SlurmOptions(
        partition="gpu",
        account="proj",
        time="02:00:00",
        max_parallel=2,
        sbatch_args=["--exclusive"],
        container_mounts=["/models:/models:ro"],
        inferx_command=["/shared/venv/bin/inferx"],
    )
    group = JobGroup(0, 8, [unit(0), unit(3)])
    script = render_script(group, tmp_path, opts, workdir=Path("/home/u"), secret_names=["X_0"])
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash"
    for directive in (
        "--job-name=inferx",
        f"--output={tmp_path}/logs/inferx-0-%A_%a.log",
        "--chdir=/home/u",
        "--partition=gpu",
        "--account=proj",
        "--time=02:00:00",
        "--gpus-per-node=8",
        "--array=0-1%2",
        "--exclusive",
    ):
        assert f"#SBATCH {directive}" in lines, directive
    assert "INDEXES=(0 3)" in lines
    assert "export INFERX_CONTAINER_MOUNTS=/models:/models:ro" in lines
    assert lines[-1] == (
        f'exec /shared/venv/bin/inferx run-job {tmp_path}/manifest.json --index "$INDEX"'
    )
    assert "X_0" in script  # named, so a reader knows where the secret comes from
    single = render_script(JobGroup(1, 0, [unit(0)]), tmp_path, SlurmOptions(), workdir=tmp_path)
    assert "#SBATCH --array" not in single and "--gpus-per-node" not in single
    assert f"#SBATCH --output={tmp_path}/logs/inferx-1-%j.log" in single.splitlines()


def test_describe_groups_by_gpus_and_moves_images_to_srun(tmp_path: Path) -> None:
    configs = [
        cfg(name="a", parallelism={"tp": 2}),
        cfg(name="b", parallelism={"tp": 2}),
        cfg(name="c", parallelism={"tp": 4}, image="vllm/vllm-openai:v0", launcher="docker"),
    ]
    view = SlurmExecutor({"container_runtime": "pyxis"}).describe(configs, tmp_path)
    jobs = view["jobs"]
    assert [(j["gpus_per_node"], j["array"], len(j["tasks"])) for j in jobs] == [
        (2, True, 2),
        (4, False, 1),
    ]
    assert jobs[1]["launch"][0]["launcher"] == "srun"
    assert jobs[1]["launch"][0]["image"] == "vllm/vllm-openai:v0"
    assert not (tmp_path / ".inferx-jobs").exists(), "describe writes nothing"
    forced = SlurmExecutor({"gpus_per_node": 0, "container_image": "img:1"}).describe(
        configs, tmp_path
    )
    assert [(j["gpus_per_node"], len(j["tasks"])) for j in forced["jobs"]] == [(0, 3)]
    assert {launch["image"] for launch in forced["jobs"][0]["launch"]} == {"img:1"}


# -- secrets --------------------------------------------------------------------------------------
def test_secrets_are_split_out_and_restored_exactly() -> None:
    c = cfg(
        engine_env={"HF_TOKEN": SECRET, "PLAIN": "x", "NCCL_DEBUG": "INFO"},
        engine_args={"api-key": "k-123", "max-num-seqs": 8},
        extra_argv=["--api-key", "k-123", "--other", "1"],
    )
    data = c.model_dump(mode="json")
    registry: dict[str, str] = {}
    clean, refs = split_secrets(data, registry)
    text = json.dumps(clean)
    assert SECRET not in text and "k-123" not in text
    # issue 15: every engine_env value is a secret unless its name is known to hold none
    assert clean["engine_env"] == {"HF_TOKEN": "***", "PLAIN": "***", "NCCL_DEBUG": "INFO"}
    assert clean["extra_argv"] == ["--api-key", "***", "--other", "1"]
    # one variable per distinct value, named, never the value
    assert len(registry) == 3 and all(n.startswith(SECRET_ENV_PREFIX) for n in registry.values())
    env = secret_environment(registry)
    restored = restore_secrets(json.loads(text), refs, env)
    assert RunConfig.model_validate(restored) == c
    with pytest.raises(UserFacingError, match="lacks INFERX_SECRET_"):
        restore_secrets(json.loads(text), refs, {})


def test_run_job_refuses_without_its_secrets(tmp_path: Path, monkeypatch) -> None:
    registry: dict[str, str] = {}
    manifest = manifest_data([unit(0, engine_env={"HF_TOKEN": SECRET})], registry)
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    assert SECRET not in path.read_text()
    for name in list(os.environ):
        if name.startswith(SECRET_ENV_PREFIX):
            monkeypatch.delenv(name)
    with pytest.raises(UserFacingError, match="sbatch --export=ALL"):
        run_job(path, 0)
    with pytest.raises(UserFacingError, match=r"has jobs 0\.\.0, not 3"):
        run_job(path, 3)


# -- the srun launcher ----------------------------------------------------------------------------
def spec(**overrides: Any) -> LaunchSpec:
    data: dict[str, Any] = {"engine": "vllm", "argv": ("vllm", "serve", "m"), "port": 8000}
    data.update(overrides)
    return LaunchSpec(**data)


def test_srun_argv_plain_and_with_pyxis(tmp_path: Path) -> None:
    plain = srun_argv(spec(), tmp_path, env={})
    assert plain[:2] == ["srun", "--overlap"] and plain[-3:] == ["vllm", "serve", "m"]
    assert not any(a.startswith("--container") for a in plain)
    boxed = srun_argv(
        spec(
            image="nvcr.io/nvidia/vllm:25.01",
            mounts=(Mount(host_path="/models", container_path="/models", read_only=True),),
            workdir="/work",
            env={"HF_TOKEN": SECRET},
        ),
        tmp_path,
        env={"INFERX_CONTAINER_MOUNTS": "/scratch:/scratch"},
    )
    assert "--container-image=nvcr.io/nvidia/vllm:25.01" in boxed
    mounts = f"--container-mounts=/models:/models:ro,{tmp_path}:/inferx/run,/scratch:/scratch"
    assert mounts in boxed
    assert "--container-workdir=/work" in boxed and "--no-container-mount-home" in boxed
    assert SECRET not in " ".join(boxed), "env values travel in srun's environment only"


def test_srun_run_dir_placeholder_is_the_path_the_engine_sees(tmp_path: Path) -> None:
    with_file = spec(argv=("serve", "--config", "{run_dir}/extra.yaml"), env={"X": "{run_dir}"})
    assert srun_argv(with_file, tmp_path, env={})[-1] == f"{tmp_path.resolve()}/extra.yaml"
    boxed = with_file.model_copy(update={"image": "img:1"})
    assert srun_argv(boxed, tmp_path, env={})[-1] == "/inferx/run/extra.yaml"
    assert SrunLauncher().describe(boxed, tmp_path)["env"] == {"X": "/inferx/run"}


def test_srun_step_drops_unset_env_inside_the_step(tmp_path: Path) -> None:
    argv = srun_argv(spec(unset_env=("SLURM_*", "PMI_RANK")), tmp_path, env={})
    wrapper = argv[argv.index("/bin/sh") :]
    shown = subprocess.run(
        [*wrapper[:4], "sh", "-c", "env"],
        env={"SLURM_JOB_ID": "1", "PMI_RANK": "0", "KEEP": "1", "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "KEEP=1" in shown and "SLURM_JOB_ID" not in shown and "PMI_RANK" not in shown
    with pytest.raises(ValueError, match="unset_env patterns"):
        srun_argv(spec(unset_env=("A;rm -rf /",)), tmp_path, env={})


def test_srun_launcher_refuses_outside_a_job(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with pytest.raises(ValueError, match="inside a SLURM job"):
        SrunLauncher().start(spec(), tmp_path)
    assert SrunLauncher().describe(spec(), tmp_path)["argv"][0] == "srun"


# -- the registry ---------------------------------------------------------------------------------
def test_slurm_is_registered_and_names_are_checked() -> None:
    pm = get_plugin_manager(env={"INFERX_PLUGINS": ""})
    assert set(executors(pm)) == {"slurm"}
    assert isinstance(get_executor(pm, "slurm", {}), SlurmExecutor)
    with pytest.raises(UserFacingError, match="unknown executor 'k8s'; known: local, slurm"):
        get_executor(pm, "k8s", {})

    @hookimpl
    def inferx_executors() -> list[ExecutorInfo]:
        return [ExecutorInfo("slurm", "impostor", SlurmExecutor)]

    mod = types.ModuleType("dup")
    mod.inferx_executors = inferx_executors  # type: ignore[attr-defined]
    dup = get_plugin_manager(env={"INFERX_PLUGINS": ""}, extra_plugins=[("dup", mod)])
    with pytest.raises(ExecutorError, match="registered by both"):
        executors(dup)


# -- the CLI --------------------------------------------------------------------------------------
def inferx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFERX_")}
    return subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )


def test_cli_plan_prints_the_batch_script_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "results"
    config = tmp_path / "run.yaml"
    config.write_text(
        f"engine: vllm\nmodel: m\noutput_dir: {out}\nengine_env: {{HF_TOKEN: {SECRET}}}\n"
        "image: vllm/vllm-openai:latest\nlauncher: docker\n"
    )
    proc = inferx(
        "plan",
        str(config),
        "--executor",
        "slurm",
        "--partition",
        "gpu",
        "--account",
        "proj",
        "--time",
        "01:00:00",
        "--gpus-per-node",
        "8",
        "--container-mounts",
        "/models:/models",
        "--sbatch-arg=--exclusive",
        "--executor-opt",
        "container_runtime=pyxis",  # auto: this machine's srun has no pyxis
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for line in (
        "#!/bin/bash",
        "#SBATCH --partition=gpu",
        "#SBATCH --account=proj",
        "#SBATCH --time=01:00:00",
        "#SBATCH --gpus-per-node=8",
        "#SBATCH --exclusive",
        "export INFERX_CONTAINER_MOUNTS=/models:/models",
    ):
        assert line in text.splitlines(), line
    assert "sbatch --parsable --export=ALL" in text
    assert "engine via srun image vllm/vllm-openai:latest" in text
    assert "engine_env.HF_TOKEN travels as $INFERX_SECRET_0" in text
    assert SECRET not in text + proc.stderr
    assert not out.exists(), "plan writes nothing"
    as_json = inferx("plan", str(config), "--executor", "slurm", "--json", cwd=tmp_path)
    view = json.loads(as_json.stdout)
    assert view["jobs"][0]["gpus_per_node"] == 1  # tp x pp x dp of the config
    dry = inferx("run", str(config), "--executor", "slurm", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0 and "#SBATCH --job-name=inferx" in dry.stdout
    assert not out.exists()


def test_cli_slurm_flags_need_the_slurm_executor(tmp_path: Path) -> None:
    config = tmp_path / "run.yaml"
    config.write_text("engine: vllm\nmodel: m\n")
    proc = inferx("plan", str(config), "--partition", "gpu", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--partition: slurm executor flag(s); add --executor slurm" in proc.stderr
    proc = inferx("run", str(config), "--executor", "nope", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown executor 'nope'" in proc.stderr


def test_poll_falls_back_to_sacct_then_to_the_jobs_status_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inferx_core.executors.jobs import status_path
    from inferx_core.sdk.executor import JobRef, Submission

    monkeypatch.setattr("inferx_core.executors.slurm._require", lambda command: None)
    logs = tmp_path / "logs"
    jobs = [
        JobRef(j, i, f"s{i}", ["p"], logs / f"{j}.log")
        for i, j in enumerate(["1", "2", "3", "4", "5"])
    ]
    status_path(tmp_path, 2).parent.mkdir()
    status_path(tmp_path, 2).write_text(json.dumps({"exit_code": 0, "host": "n7"}))
    status_path(tmp_path, 3).write_text(json.dumps({"exit_code": 1, "host": "n8"}))

    class Fake(SlurmExecutor):
        def _squeue(self, job_ids: list[str]) -> dict[str, tuple[str, str, str]]:
            return {"1": ("RUNNING", "", "n1")}

        def _sacct(self, job_ids: list[str]) -> dict[str, tuple[str, str, str]]:
            assert job_ids == ["2", "3", "4", "5"]
            return {"2": ("TIMEOUT", "0:15", "n2")}

    statuses = Fake({}).poll(Submission("slurm", tmp_path, tmp_path, jobs=jobs))
    got = [(s.job.job_id, s.state, s.node) for s in statuses]
    # 2: from sacct; 3 and 4: gone from both, their own status files say how they ended
    assert got == [
        ("1", "running", "n1"),
        ("2", "failed", "n2"),
        ("3", "done", "n7"),
        ("4", "failed", "n8"),
        ("5", "unknown", ""),
    ]
    assert statuses[3].exit_code == 1 and statuses[1].reason == "exit code 0:15"


def test_a_deployment_is_refused_by_an_executor_whose_jobs_start_one_server(
    tmp_path: Path,
) -> None:
    """run-job of an executor that does not start a deployment's processes would run it as a
    monolithic server under the deployment's name: plan_units refuses it, naming the server
    and what works (the slurm executor takes it: test_slurm_deployment_units.py)."""
    deployment = {
        "kind": "wide_ep",
        "roles": [{"role": "both", "replicas": 2}, {"role": "router"}],
    }
    config = cfg(deployment=deployment, output_dir=str(tmp_path / "out"))
    with pytest.raises(UserFacingError, match=r"w2xtp1.*cannot be run by this executor"):
        plan_units([config], tmp_path)
    assert plan_units([config], tmp_path, deployments=True).units[0].config.deployment
    assert not (tmp_path / "out").exists()  # nothing written
