"""Cost per million tokens and tokens per MW: tables, overrides, GPU type, assumed GPUs."""

from __future__ import annotations

import pytest
from result_factory import make_model, make_result

from inferx_core.analysis.cost import (
    KW_PER_GPU,
    USD_PER_GPU_HOUR,
    CostOptions,
    cost_fields,
    gpu_type_from_name,
    resolve_gpu_type,
)
from inferx_core.results.model import parse_result


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA H200", "H200"),
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA H100-SXM5-80GB", "H100"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA GB200", "GB200"),
        ("AMD Instinct MI300X", "MI300X"),
        ("AMD Instinct MI300X OAM", "MI300X"),
        ("AMD Instinct MI325X", "MI325X"),
        ("AMD Instinct MI355X", "MI355X"),
        ("NVIDIA GH200 480GB", None),  # not an H200
        ("AMD Instinct MI300A", None),
        ("NVIDIA A100-SXM4-80GB", None),
        ("", None),
        (None, None),
    ],
)
def test_gpu_type_from_product_names(name: str | None, expected: str | None) -> None:
    assert gpu_type_from_name(name) == expected


def test_tables_hold_the_domain_figures() -> None:
    assert USD_PER_GPU_HOUR["H100"] == {"owner": 1.30, "neocloud": 1.69, "rental": 1.30}
    assert USD_PER_GPU_HOUR["H200"] == {"owner": 1.41, "neocloud": 1.74, "rental": 1.60}
    assert USD_PER_GPU_HOUR["B200"] == {"owner": 1.95, "neocloud": 2.34, "rental": 2.90}
    assert USD_PER_GPU_HOUR["GB200"] == {"owner": 2.21, "neocloud": 2.75, "rental": 3.30}
    assert USD_PER_GPU_HOUR["MI300X"] == {"owner": 1.12, "neocloud": 1.40, "rental": 1.55}
    assert USD_PER_GPU_HOUR["MI325X"] == {"owner": 1.28, "neocloud": 1.59, "rental": 1.80}
    assert USD_PER_GPU_HOUR["MI355X"] == {"owner": 1.48, "neocloud": 1.90, "rental": 2.10}
    assert KW_PER_GPU == {
        "H100": 1.73,
        "H200": 1.73,
        "B200": 2.17,
        "GB200": 2.10,
        "MI300X": 1.79,
        "MI325X": 2.18,
        "MI355X": 2.65,
    }


def test_golden_cost_and_power_for_an_h200_point() -> None:
    # 1000 tok/s/gpu total, 400 output, 600 input; H200 owner 1.41 $/h, 1.73 kW.
    r = make_result("p", tput_per_gpu=1000.0, output_share=0.4, num_gpus=8, power=5600.0)
    f = cost_fields(parse_result(r))
    assert (f["gpu_type"], f["gpu_type_source"]) == ("H200", "platform")
    assert (f["num_gpus"], f["num_gpus_source"]) == (8, "result")
    assert (f["usd_per_gpu_hour"], f["price_source"]) == (1.41, "table H200 owner")
    # $/Mtok = 1.41 / (rate * 3600 / 1e6)
    assert f["cost_per_mtok_total"] == pytest.approx(1.41 / 3.6)  # 0.391667
    assert f["cost_per_mtok_output"] == pytest.approx(1.41 / (400 * 0.0036))  # 0.979167
    assert f["cost_per_mtok_input"] == pytest.approx(1.41 / (600 * 0.0036))  # 0.652778
    assert f["kw_per_gpu"] == 1.73
    assert f["tok_s_per_mw_provisioned"] == pytest.approx(1000 * 1000 / 1.73)  # 578034.7
    assert f["output_tok_s_per_mw_provisioned"] == pytest.approx(400 * 1000 / 1.73)
    # measured: 8000 tok/s over 5600 W -> 1.428571e6 tok/s per MW (chip power)
    assert f["tok_s_per_mw_measured"] == pytest.approx(8000 / 5600e-6)
    assert f["output_tok_s_per_mw_measured"] == pytest.approx(3200 / 5600e-6)
    assert "chip" in f["measured_power_basis"]


def test_measured_power_only_when_valid() -> None:
    r = make_result("p", power=700.0)
    r["power_valid"] = False
    r["power_invalid_reason"] = "sample gap 4 s > 3 s"
    f = cost_fields(parse_result(r))
    assert f["tok_s_per_mw_measured"] is None
    assert "sample gap" in f["measured_power_basis"]
    assert f["tok_s_per_mw_provisioned"] is not None  # labelled apart, still there


def test_tiers_and_user_prices_override_the_table() -> None:
    r = make_model("p", gpu_name="AMD Instinct MI355X")
    assert cost_fields(r, CostOptions(tier="rental"))["usd_per_gpu_hour"] == 2.10
    f = cost_fields(r, CostOptions(usd_per_gpu_hour={"*": 3.0}))
    assert (f["usd_per_gpu_hour"], f["price_source"]) == (3.0, "user")
    assert f["cost_per_mtok_total"] == pytest.approx(3.0 / 3.6)
    # per-type price applies to its type only
    other = cost_fields(r, CostOptions(usd_per_gpu_hour={"H200": 9.0}))
    assert other["usd_per_gpu_hour"] == 1.48
    typed = cost_fields(r, CostOptions(usd_per_gpu_hour={"MI355X": 2.5, "*": 9.0}))
    assert typed["usd_per_gpu_hour"] == 2.5
    assert cost_fields(r, CostOptions(kw_per_gpu={"*": 2.0}))["tok_s_per_mw_provisioned"] == (
        pytest.approx(1000 * 1000 / 2.0)
    )


def test_config_cost_section_is_used() -> None:
    r = make_result(
        "p",
        gpu_name=None,
        cost={"gpu_type": "b200", "tier": "neocloud", "usd_per_gpu_hour": None, "kw_per_gpu": 2.5},
    )
    f = cost_fields(parse_result(r))
    assert (f["gpu_type"], f["gpu_type_source"]) == ("B200", "config cost.gpu_type")
    assert f["usd_per_gpu_hour"] == 2.34
    assert (f["kw_per_gpu"], f["kw_source"]) == (2.5, "config")
    priced = make_result("q", cost={"gpu_type": None, "tier": "owner", "usd_per_gpu_hour": 4.0})
    assert cost_fields(parse_result(priced))["price_source"] == "config"
    # the user's --gpu-type wins over both
    assert cost_fields(parse_result(r), CostOptions(gpu_type="mi300x"))["gpu_type"] == "MI300X"


def test_gpu_type_uses_the_gpus_the_engine_ran_on() -> None:
    r = make_result("p", num_gpus=2)
    r["platform"]["accelerators"][5]["name"] = "NVIDIA H100 80GB HBM3"  # not used (ids 0, 1)
    assert resolve_gpu_type(parse_result(r), CostOptions())[0] == "H200"
    r["launch"]["spec"]["gpu_ids"] = [4, 5]
    assert resolve_gpu_type(parse_result(r), CostOptions())[0] is None  # mixed: no guess


def test_unknown_gpu_count_uses_num_gpus_and_says_so() -> None:
    r = make_result("p", num_gpus=None, tput_per_gpu=1600.0, bench=True)
    assert r["tput_per_gpu"] is None
    f = cost_fields(parse_result(r), CostOptions(num_gpus=8, gpu_type="H100"))
    assert (f["num_gpus"], f["num_gpus_source"]) == (8, "assumed (--num-gpus)")
    assert f["tput_per_gpu"] == pytest.approx(200.0)
    assert f["output_tput_per_gpu"] == pytest.approx(100.0)
    assert f["input_tput_per_gpu"] == pytest.approx(100.0)
    assert f["cost_per_mtok_total"] == pytest.approx(1.30 / (200 * 0.0036))
    default = cost_fields(parse_result(r))
    assert default["num_gpus"] == 1 and default["num_gpus_source"].startswith("assumed")
    assert default["tput_per_gpu"] == pytest.approx(1600.0)
    assert default["usd_per_gpu_hour"] is None and default["cost_per_mtok_total"] is None
    # a result that counted its GPUs keeps its own figures
    own = cost_fields(make_model("q", num_gpus=4), CostOptions(num_gpus=8))
    assert own["num_gpus"] == 4 and own["tput_per_gpu"] == 1000.0


def test_option_validation() -> None:
    with pytest.raises(ValueError, match="tier"):
        CostOptions(tier="spot")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_gpus"):
        CostOptions(num_gpus=0)
