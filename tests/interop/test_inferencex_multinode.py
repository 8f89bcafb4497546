"""Disaggregated (multi-node) InferenceX aggregates: process_result.py's IS_MULTINODE branch.

Expected values follow InferenceX's own test of that branch: 5 prefill workers
of TP 4 (20 GPUs), 1 decode worker of TP 8 (8 GPUs), throughput per GPU over
all 28, output over the decode GPUs, input over the prefill GPUs.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from result_factory import make_model

from inferx_core.errors import UserFacingError
from inferx_core.interop.inferencex import (
    NotExportable,
    expected_gpus,
    inferencex_aggregate,
)
from inferx_core.interop.metadata import resolve_metadata

BASE = {"hw": "gb200", "precision": "fp4", "framework": "dynamo-trt", "model_prefix": "dsr1"}
ROLES = {
    "multinode": "true", "disagg": "true", "prefill_gpus": "20", "decode_gpus": "8",
    "prefill_num_workers": "5", "prefill_tp": "4", "prefill_ep": "4",
    "prefill_dp_attention": "true", "decode_num_workers": "1", "decode_tp": "8",
    "decode_ep": "8", "decode_dp_attention": "true",
}  # fmt: skip
VLLM = {"model_id": "m", "max_concurrency": 64, "total_token_throughput": 15000.5,
        "output_throughput": 12000.0, "median_tpot_ms": 10.0}  # fmt: skip


def test_the_multinode_branch_fields_and_per_gpu_figures() -> None:
    meta = resolve_metadata(make_model("p", concurrency=64), BASE | ROLES)
    agg = inferencex_aggregate(VLLM, meta)
    assert agg["is_multinode"] is True and agg["disagg"] is True
    assert (agg["prefill_tp"], agg["prefill_ep"], agg["prefill_num_workers"]) == (4, 4, 5)
    assert (agg["decode_tp"], agg["decode_ep"], agg["decode_num_workers"]) == (8, 8, 1)
    assert agg["prefill_dp_attention"] == "true" and agg["decode_dp_attention"] == "true"
    assert (agg["prefill_pp"], agg["decode_pcp_size"]) == (1, 1)
    assert (agg["num_prefill_gpu"], agg["num_decode_gpu"]) == (20, 8)
    assert agg["tput_per_gpu"] == pytest.approx(15000.5 / 28)
    assert agg["output_tput_per_gpu"] == pytest.approx(12000.0 / 8)
    assert agg["input_tput_per_gpu"] == pytest.approx((15000.5 - 12000.0) / 20)
    assert "tp" not in agg and "prefill_hw" not in agg  # homogeneous: no role hardware
    assert expected_gpus(meta) == 28


def test_role_hardware_goes_together() -> None:
    model = make_model("p", concurrency=64)
    agg = inferencex_aggregate(
        VLLM, resolve_metadata(model, BASE | ROLES | {"prefill_hw": "gb200", "decode_hw": "h100"})
    )
    assert (agg["prefill_hw"], agg["decode_hw"]) == ("gb200", "h100")
    with pytest.raises(NotExportable, match="prefill_hw and decode_hw together"):
        inferencex_aggregate(VLLM, resolve_metadata(model, BASE | ROLES | {"prefill_hw": "x"}))


def test_no_decode_gpus_zeroes_the_decode_shape() -> None:
    meta = resolve_metadata(make_model("p", concurrency=64), BASE | ROLES | {"decode_gpus": "0"})
    agg = inferencex_aggregate(VLLM, meta)
    assert (agg["decode_tp"], agg["decode_ep"], agg["decode_pp"]) == (0, 0, 1)
    assert agg["output_tput_per_gpu"] == pytest.approx(12000.0 / 20)  # over all GPUs


def test_missing_role_fields_are_named_and_single_node_ones_are_not_asked() -> None:
    with pytest.raises(UserFacingError) as err:
        resolve_metadata(make_model("p", concurrency=64), BASE | {"multinode": "true"})
    message = str(err.value)
    assert "--set prefill_gpus=..." in message and "--set decode_dp_attention=..." in message
    assert "--set tp=" not in message and "prefill_hw" not in message


def test_a_disaggregated_result_is_multinode_from_its_own_gpu_counts() -> None:
    model = make_model("p", concurrency=64)
    tput = model.throughput.model_copy(update={"num_prefill_gpus": 4, "num_decode_gpus": 2})
    disagg = model.model_copy(update={"throughput": tput})
    roles = {
        k: v for k, v in ROLES.items() if k not in ("multinode", "prefill_gpus", "decode_gpus")
    }
    meta = resolve_metadata(disagg, BASE | roles)
    assert meta.origins["multinode"] == "result" and meta.values["prefill_gpus"] == 4
    assert inferencex_aggregate(VLLM, meta)["num_decode_gpu"] == 2


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 64), st.integers(0, 64), st.floats(1.0, 1e5), st.floats(0.05, 0.95))
def test_per_gpu_figures_add_up(prefill: int, decode: int, total: float, share: float) -> None:
    sets = BASE | ROLES | {"prefill_gpus": str(prefill), "decode_gpus": str(decode)}
    vllm = VLLM | {"total_token_throughput": total, "output_throughput": total * share}
    agg = inferencex_aggregate(vllm, resolve_metadata(make_model("p", concurrency=64), sets))
    assert agg["tput_per_gpu"] * (prefill + decode) == pytest.approx(total)
    assert agg["input_tput_per_gpu"] * prefill == pytest.approx(total * (1 - share))


def deployed(deployment: dict, parallelism: dict | None = None):
    """A result whose recorded run config has ``deployment:`` (what ``inferx run`` writes)."""
    model = make_model("p", concurrency=64)
    config = {**(model.provenance.config or {}), "deployment": deployment}
    config["parallelism"] = parallelism or {"tp": 1}
    return model.model_copy(
        update={"provenance": model.provenance.model_copy(update={"config": config})}
    )


def test_a_disaggregated_deployment_gives_every_role_field_from_its_config() -> None:
    result = deployed(
        {
            "kind": "disaggregated",
            "roles": [
                {"role": "prefill", "replicas": 2, "parallelism": {"tp": 4}},
                {"role": "decode", "parallelism": {"tp": 8, "ep": 8, "dp_attention": True}},
                {"role": "router"},
            ],
        }
    )
    meta = resolve_metadata(result, BASE)  # no --set of any role field
    agg = inferencex_aggregate(VLLM, meta)
    assert agg["is_multinode"] is True and agg["disagg"] is True
    assert (agg["prefill_num_workers"], agg["prefill_tp"], agg["num_prefill_gpu"]) == (2, 4, 8)
    assert (agg["decode_tp"], agg["decode_ep"], agg["decode_dp_attention"]) == (8, 8, "true")
    assert agg["num_decode_gpu"] == 8  # the router counts none
    assert expected_gpus(meta) == 16


def test_replicas_behind_a_router_divide_by_every_replica_gpu() -> None:
    """wide_ep x2 of TP 2: the multi-node aggregate without decode workers, over 4 GPUs;
    the single-node branch would divide by one replica's TP."""
    result = deployed(
        {"kind": "wide_ep", "roles": [{"role": "both", "replicas": 2}, {"role": "router"}]},
        {"tp": 2},
    )
    agg = inferencex_aggregate(VLLM, resolve_metadata(result, BASE))
    assert agg["is_multinode"] is True and agg["disagg"] is False
    assert (agg["num_prefill_gpu"], agg["num_decode_gpu"], agg["prefill_num_workers"]) == (4, 0, 2)
    assert agg["tput_per_gpu"] == pytest.approx(15000.5 / 4)
    assert agg["output_tput_per_gpu"] == pytest.approx(12000.0 / 4)
