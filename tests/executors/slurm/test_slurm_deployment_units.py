"""``--executor slurm`` of a deployment, as data: the job script, the steps, the placement.

One job of the deployment's nodes (``--nodes=N --ntasks-per-node=1``) whose
runner starts every process as an ``srun --overlap --nodes=1 --ntasks=1
--nodelist=NODE`` step, the router on the first node. The real run on the
test cluster is tests/executors/slurm/test_slurm_deployment.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import fake_engine
import pytest

from inferx_core.config.models import RunConfig
from inferx_core.errors import UserFacingError
from inferx_core.executors.deployment_run import DeploymentLauncher, slurm_deployment_launch_plan
from inferx_core.executors.jobs import JobUnit
from inferx_core.executors.slurm import SlurmExecutor
from inferx_core.executors.slurm_script import group_units, render_script
from inferx_core.executors.slurm_steps import StepLauncher, deployment_hosts, step_argv
from inferx_core.sdk.executor import ExecutorError
from inferx_core.sdk.launch_spec import LaunchSpec
from inferx_core.sdk.manager import get_plugin_manager
from inferx_core.sdk.platform import Platform

DOCS_DISAGGREGATED = {
    "engine": "sglang",
    "model": "deepseek-ai/DeepSeek-R1",
    "parallelism": {"tp": 8},
    "engine_args": {"mem-fraction-static": 0.85},
    "deployment": {
        "kind": "disaggregated",
        "port": 8000,
        "roles": [
            {"role": "prefill", "replicas": 2, "parallelism": {"tp": 8}},
            {
                "role": "decode",
                "nodes": 2,
                "parallelism": {"tp": 16, "dp": 16, "ep": 16, "dp_attention": True},
            },
            {"role": "router"},
        ],
    },
    "workload": {"isl": 8192, "osl": 1024},
    "load": {"concurrency": [64]},
}
TWO_REPLICAS = {"kind": "wide_ep", "roles": [{"role": "both", "replicas": 2}, {"role": "router"}]}
SECRET = "sk-deployment-secret-31"


def config(data: dict[str, Any], tmp_path: Path, **overrides: Any) -> RunConfig:
    return RunConfig.model_validate({**data, "output_dir": str(tmp_path / "out"), **overrides})


def describe(configs: list[RunConfig], tmp_path: Path, **opts: Any) -> dict[str, Any]:
    return SlurmExecutor(opts).describe(configs, tmp_path / "out")


def test_a_disaggregated_job_asks_every_node_and_steps_each_process_on_its_node(
    tmp_path: Path,
) -> None:
    view = describe([config(DOCS_DISAGGREGATED, tmp_path)], tmp_path, partition="gpu")
    (job,) = view["jobs"]
    script = job["script"].splitlines()
    # 2 prefill nodes + 2 decode nodes; the router shares node0; 8 GPUs on each node
    for line in ("#SBATCH --nodes=4", "#SBATCH --ntasks-per-node=1", "#SBATCH --gpus-per-node=8"):
        assert line in script, line
    assert "--ntasks=1" not in " ".join(line for line in script if line.startswith("#SBATCH"))
    assert job["nodes"] == 4 and job["gpus_per_node"] == 8 and not job["array"]
    (task,) = job["tasks"]
    steps = task["steps"]
    names = [s["name"] for s in steps]
    assert names == ["prefill-0", "prefill-1", "decode-0-rank0", "decode-0-rank1", "router"]
    assert [s["node"] for s in steps] == ["node0", "node1", "node2", "node3", "node0"]
    for step in steps:
        assert step["argv"][:6] == [
            "srun",
            "--overlap",
            "--nodes=1",
            "--ntasks=1",
            f"--nodelist={step['node']}",
            "--kill-on-bad-exit=1",
        ]
        assert f"--job-name=inferx-{step['name']}" in step["argv"]
    router = steps[-1]["argv"]
    assert router[router.index("--job-name=inferx-router") + 1 :][:3] == [
        "python3",
        "-m",
        "sglang_router.launch_router",
    ]
    joined = " ".join(router)
    assert "--prefill http://node0:8001 8998 --prefill http://node1:8001 8998" in joined
    assert "--decode http://node2:8002" in joined
    # the decode replica spans node2 and node3: rank 1 joins rank 0's rendezvous
    rank1 = steps[3]["argv"]
    assert rank1[rank1.index("--dist-init-addr") + 1] == "node2:29500"
    assert rank1[rank1.index("--node-rank") + 1] == "1"
    # the script names each step, then runs the ordinary runner (which starts them)
    router_line = "#       router on node0 (http://node0:8000): srun"
    assert any(line.startswith(router_line) for line in script)
    assert script[-1].startswith("exec ") and " run-job " in script[-1]


def test_nodes_option_packs_the_processes_onto_fewer_nodes(tmp_path: Path) -> None:
    cfg = config(
        {"engine": "vllm", "model": "m", "deployment": {**TWO_REPLICAS, "port": 9100}}, tmp_path
    )
    (job,) = describe([cfg], tmp_path, nodes=1)["jobs"]
    assert "#SBATCH --nodes=1" in job["script"].splitlines()
    assert job["gpus_per_node"] == 2  # both replicas' GPU on the one node
    steps = job["tasks"][0]["steps"]
    assert [s["node"] for s in steps] == ["node0"] * 3
    # on one node they talk over 127.0.0.1, each on its own port
    assert [s["url"] for s in steps] == [
        "http://127.0.0.1:9101",
        "http://127.0.0.1:9102",
        "http://127.0.0.1:9100",
    ]
    (job,) = describe([cfg], tmp_path, nodes=1, gpus_per_node=0)["jobs"]
    assert "--gpus-per-node" not in job["script"]


def test_deployment_hosts_spread_pack_and_refuse() -> None:
    cfg = RunConfig.model_validate({"engine": "vllm", "model": "m", "deployment": TWO_REPLICAS})
    dep = cfg.deployment
    assert dep is not None
    assert deployment_hosts(dep, ["a", "b"], 2) == (["a", "b"], {"a": "a", "b": "b"})
    assert deployment_hosts(dep, ["a", "b"], 3) == (["a", "b", "a"], {"a": "a", "b": "b"})
    assert deployment_hosts(dep, ["a"], 2) == (["127.0.0.1"] * 2, {"127.0.0.1": "a"})
    wide = RunConfig.model_validate(DOCS_DISAGGREGATED).deployment
    assert wide is not None
    with pytest.raises(UserFacingError, match="spans 2 nodes, the job has 1: a"):
        deployment_hosts(wide, ["a"], 4)


def test_no_secret_in_the_script_or_the_steps(tmp_path: Path) -> None:
    cfg = config(
        {"engine": "vllm", "model": "m", "deployment": TWO_REPLICAS},
        tmp_path,
        engine_args={"api-key": SECRET},
        engine_env={"HF_TOKEN": SECRET},
    )
    view = describe([cfg], tmp_path)
    assert SECRET not in json.dumps(view)
    steps = view["jobs"][0]["tasks"][0]["steps"]
    argv = steps[0]["argv"]
    assert argv[argv.index("--api-key") + 1] == "***"
    assert {ref["env"] for ref in view["secret_env"]} == {"INFERX_SECRET_0"}, view["secret_env"]


def test_client_nodes_and_a_deployment_are_refused(tmp_path: Path) -> None:
    cfg = config({"engine": "vllm", "model": "m", "deployment": TWO_REPLICAS}, tmp_path)
    with pytest.raises(ExecutorError, match="client_nodes with a deployment"):
        describe([cfg], tmp_path, client_nodes=1)


def test_deployments_and_single_servers_go_out_as_separate_jobs(tmp_path: Path) -> None:
    dep = config({"engine": "vllm", "model": "m", "deployment": TWO_REPLICAS}, tmp_path)
    single = config({"engine": "vllm", "model": "m"}, tmp_path)
    units = [JobUnit(i, f"s{i}", c, tmp_path, ["p"], ["p"]) for i, c in enumerate([single, dep])]
    groups = group_units(units, SlurmExecutor({}).options)
    assert [(g.nodes, g.gpus, [u.index for u in g.units]) for g in groups] == [
        (None, 1, [0]),
        (2, 1, [1]),
    ]
    script = render_script(groups[0], tmp_path, SlurmExecutor({}).options, workdir=tmp_path)
    assert "#SBATCH --nodes=1" in script and "#SBATCH --ntasks=1" in script


# -- the runner's side: the planner of a job -----------------------------------------------------
def fake_pm() -> Any:
    sys.path.insert(0, str(Path(__file__).parent))
    import deployment_roles

    return get_plugin_manager(
        env={"INFERX_PLUGINS": ""},
        extra_plugins=[("fake", fake_engine), ("fake-roles", deployment_roles)],
    )


def fake_config(tmp_path: Path) -> RunConfig:
    return config(
        {
            "engine": "fake",
            "model": "org/tiny",
            "plugin_options": {"router_command": ["sglang-router"]},
            "deployment": {**TWO_REPLICAS, "port": 9200},
        },
        tmp_path,
    )


def test_the_job_planner_puts_processes_on_the_allocation(tmp_path: Path) -> None:
    cfg = fake_config(tmp_path)
    plan = slurm_deployment_launch_plan(
        cfg, fake_pm(), Platform(), output_dir=tmp_path / "out", nodes=["gpu-a", "gpu-b"]
    )
    launcher = plan.launcher
    assert isinstance(launcher, DeploymentLauncher)
    assert isinstance(launcher.plan.launcher, StepLauncher)
    view = launcher.describe(plan.resolved.spec, plan.run_dir)
    procs = {p["name"]: p for p in view["processes"]}
    assert {n: p["node"] for n, p in procs.items()} == {
        "both-0": "gpu-a",
        "both-1": "gpu-b",
        "router": "gpu-a",
    }
    assert procs["both-1"]["argv"][4] == "--nodelist=gpu-b"
    router = procs["router"]["argv"]
    assert router[router.index("--worker-urls") + 1 :][:2] == [
        "http://gpu-a:9201",
        "http://gpu-b:9201",
    ]
    assert plan.server.host == "gpu-a" and plan.server.port == 9200  # the endpoint
    # one node: everything on it, over 127.0.0.1
    packed = slurm_deployment_launch_plan(
        cfg, fake_pm(), Platform(), output_dir=tmp_path / "out", nodes=["gpu-a"]
    )
    assert packed.launcher.describe(packed.resolved.spec, packed.run_dir)["endpoint"] == (
        "http://127.0.0.1:9200"
    )
    assert packed.server.host == "127.0.0.1"


def test_the_job_planner_plans_deployments_only(tmp_path: Path) -> None:
    """A job picks it for a deployment (a single server is plan_launch's, run_job decides)."""
    single = fake_config(tmp_path).model_copy(update={"deployment": None})
    with pytest.raises(ValueError, match="plans a deployment"):
        slurm_deployment_launch_plan(single, fake_pm(), Platform(), output_dir=tmp_path, port=9)


def test_the_job_planner_needs_a_slurm_job(tmp_path: Path, monkeypatch) -> None:
    for name in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(UserFacingError, match="inside a SLURM job"):
        slurm_deployment_launch_plan(
            fake_config(tmp_path), fake_pm(), Platform(), output_dir=tmp_path
        )
    planned = slurm_deployment_launch_plan(
        fake_config(tmp_path), fake_pm(), Platform(), output_dir=tmp_path, nodes=["n0"]
    )
    assert isinstance(planned.launcher, DeploymentLauncher)
    with pytest.raises(ValueError, match="inside a SLURM job"):
        StepLauncher().start_role(planned.launcher.plan.launches[0], tmp_path)


def test_step_argv_keeps_the_srun_launchers_parts(tmp_path: Path) -> None:
    spec = LaunchSpec(
        engine="fake",
        argv=("serve", "--x"),
        port=1,
        image="img:1",
        unset_env=("SLURM_*",),
    )
    argv = step_argv(spec, tmp_path, node="n3", process="decode-1")
    assert argv[:5] == ["srun", "--overlap", "--nodes=1", "--ntasks=1", "--nodelist=n3"]
    assert "--job-name=inferx-decode-1" in argv and "--container-image=img:1" in argv
    assert argv[-2:] == ["serve", "--x"] and "/bin/sh" in argv  # unset_env inside the step
    with pytest.raises(ValueError, match="decode-1 needs the node"):
        step_argv(spec, tmp_path, node=None, process="decode-1")


# -- the CLI ---------------------------------------------------------------------------------------
def test_cli_plan_shows_the_deployment_job_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "results"
    path = tmp_path / "dep.yaml"
    path.write_text(
        f"engine: vllm\nmodel: m\noutput_dir: {out}\n"
        "deployment: {kind: wide_ep, roles: [{role: both, replicas: 2}, {role: router}]}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INFERX_")}
    proc = subprocess.run(
        [sys.executable, "-m", "inferx_core.cli", "plan", str(path), "--executor", "slurm"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "#SBATCH --nodes=2" in lines and "#SBATCH --ntasks-per-node=1" in lines
    steps = [line for line in lines if line.startswith("#       ")]
    assert [s.split()[1:4] for s in steps] == [
        ["both-0", "on", "node0"],
        ["both-1", "on", "node1"],
        ["router", "on", "node0"],
    ]
    assert not out.exists()


def test_a_step_argv_spanning_lines_stays_one_comment_line(tmp_path: Path) -> None:
    """A worker started with ``python -c SCRIPT`` (several lines) must not break the script."""
    cfg = config(
        {
            "engine": "fake",
            "model": "org/tiny",
            "plugin_options": {"router_command": ["r"], "replica_modes": {"1": "die_after_s"}},
            "deployment": TWO_REPLICAS,
        },
        tmp_path,
    )
    unit = JobUnit(0, "s0", cfg, tmp_path, ["p"], ["p"])
    opts = SlurmExecutor({}).options
    (group,) = group_units([unit], opts)
    step = "both-1 on node1: srun python -c 'import os\nos._exit(9)'"
    script = render_script(group, tmp_path, opts, workdir=tmp_path, steps={0: [step]})
    lines = script.splitlines()
    assert "#       both-1 on node1: srun python -c 'import os\\nos._exit(9)'" in lines
    assert all(line.startswith("#") for line in lines[: lines.index("set -euo pipefail")])
