"""Step 0, the environment check: pure rules on sample input, then the real check here."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import tensorflow as tf
from helpers import assert_one_sentence

from {{ cookiecutter.package_name }} import artifacts, env

PACKAGE = "{{ cookiecutter.package_name }}"
BAKED_TENSORFLOW = "{{ cookiecutter.tensorflow_version }}"
BUILD = {
    "cuda_version": "12.5.1",
    "cudnn_version": "9",
    "is_cuda_build": True,
    "is_tensorrt_build": False,
    "cuda_compute_capabilities": ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"],
}
SMI_TWO_GPUS = """
535.104.05, NVIDIA A100-SXM4-80GB, 81920 MiB
535.104.05, NVIDIA A100-SXM4-80GB, 81920 MiB
"""


# nvidia-smi


def test_parse_nvidia_smi_reads_driver_name_and_memory_per_gpu():
    """Each csv line becomes one GPU with the driver version, model name and MiB of memory."""
    gpus = env.parse_nvidia_smi(SMI_TWO_GPUS)
    assert len(gpus) == 2
    assert gpus[1] == {
        "driver_version": "535.104.05",
        "name": "NVIDIA A100-SXM4-80GB",
        "memory_total_mib": 81920,
    }


def test_parse_nvidia_smi_keeps_commas_in_names_and_unknown_memory():
    """A model name with a comma stays whole, and memory reported as [N/A] becomes None."""
    gpus = env.parse_nvidia_smi("550.54.15, Tesla T4, rev B, [N/A]\n")
    assert gpus == [
        {"driver_version": "550.54.15", "name": "Tesla T4, rev B", "memory_total_mib": None}
    ]


def test_parse_nvidia_smi_refuses_text_that_is_not_the_query_answer():
    """An error text in place of the csv answer raises, naming the line: no made-up driver."""
    with pytest.raises(ValueError, match="couldn't communicate"):
        env.parse_nvidia_smi(
            "NVIDIA-SMI has failed because it couldn't communicate with the driver"
        )


def _fake_nvidia_smi(folder, output: str, code: int = 0) -> str:
    """A folder holding an `nvidia-smi` that prints `output` and exits with `code`."""
    script = folder / "nvidia-smi"
    script.write_text(f"#!{sys.executable}\nimport sys\nprint({output!r})\nsys.exit({code})\n")
    script.chmod(0o755)
    return str(folder)


def test_driver_info_reads_the_driver_from_nvidia_smi(tmp_path, monkeypatch):
    """With nvidia-smi on PATH, the driver version and the GPU names come from its answer."""
    monkeypatch.setenv("PATH", _fake_nvidia_smi(tmp_path, SMI_TWO_GPUS.strip()))
    driver = env.driver_info()
    assert driver["found"] is True
    assert driver["version"] == "535.104.05"
    assert len(driver["gpus"]) == 2


def test_driver_info_reports_a_failing_nvidia_smi_as_no_driver(tmp_path, monkeypatch):
    """nvidia-smi that cannot reach the driver means no driver, and its own words are kept."""
    failure = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    monkeypatch.setenv("PATH", _fake_nvidia_smi(tmp_path, failure, code=9))
    driver = env.driver_info()
    assert driver["found"] is False and driver["version"] is None
    assert "no NVIDIA driver found" in driver["message"]
    assert "couldn't communicate" in driver["message"]


def test_driver_info_without_nvidia_smi_says_no_driver(tmp_path, monkeypatch):
    """Without nvidia-smi the report says plainly that no NVIDIA driver was found."""
    monkeypatch.setenv("PATH", str(tmp_path))
    driver = env.driver_info()
    assert driver["found"] is False
    assert driver["message"].startswith("no NVIDIA driver found")


# memory growth


@pytest.mark.parametrize("forced", [None, "true"])
def test_memory_growth_after_gpu_initialization_is_reported_not_raised(monkeypatch, forced):
    """When TensorFlow refuses (GPUs already initialized) the report says so and how to fix it."""
    gpu = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")

    def refuse(device, enable):
        raise RuntimeError("Physical devices cannot be modified after being initialized")

    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [gpu])
    monkeypatch.setattr(tf.config.experimental, "set_memory_growth", refuse)
    monkeypatch.setattr(tf.config.experimental, "get_memory_growth", lambda device: False)
    if forced:
        monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", forced)
    else:
        monkeypatch.delenv("TF_FORCE_GPU_ALLOW_GROWTH", raising=False)
    growth = env.configure_memory_growth()
    assert growth["status"] == "already initialized"
    assert growth["enabled"] == {"/physical_device:GPU:0": False}
    assert "restart the kernel" in growth["message"]
    assert "TF_FORCE_GPU_ALLOW_GROWTH=true" in growth["message"]
    assert ("whatever this switch says" in growth["message"]) is bool(forced)


# mixed precision


@pytest.mark.parametrize(
    ("capability", "float16", "bfloat16", "policy"),
    [
        ("6.1", False, False, "float32"),
        ("7.0", True, False, "mixed_float16"),
        ("7.5", True, False, "mixed_float16"),
        ("8.0", True, True, "mixed_float16"),
        ("8.6", True, True, "mixed_float16"),
        ("9.0", True, True, "mixed_float16"),
        ((8, 9), True, True, "mixed_float16"),
        ("sm_75", True, False, "mixed_float16"),
        (None, False, False, "float32"),
    ],
)
def test_precision_rule_follows_tensor_core_generations(capability, float16, bfloat16, policy):
    """float16 Tensor Cores from compute capability 7.0, bfloat16 from 8.0; else float32."""
    support = env.precision_support(capability)
    assert (support["float16"], support["bfloat16"], support["policy"]) == (
        float16,
        bfloat16,
        policy,
    )
    assert support["note"].startswith(policy)


def test_cpu_precision_advice_is_float32_and_explains_mixed_bfloat16():
    """The CPU row recommends float32 and says mixed_bfloat16 only serves to test code paths."""
    (cpu,) = env.mixed_precision_support([])
    assert cpu["policy"] == "float32"
    assert "mixed_bfloat16 runs but only to test code paths" in cpu["note"]


def test_recommended_policy_follows_the_weakest_gpu():
    """The weakest GPU decides: T4 + A100 share mixed_float16, P100 + A100 float32."""
    rows = env.mixed_precision_support(
        [_gpu("GPU:0", "NVIDIA A100", "8.0"), _gpu("GPU:1", "Tesla T4", "7.5")]
    )
    assert env.recommended_policy(rows, gpu_available=True) == "mixed_float16"
    assert env.recommended_policy(rows[:1], gpu_available=False) == "float32"
    with_pascal = env.mixed_precision_support(
        [_gpu("GPU:0", "NVIDIA A100", "8.0"), _gpu("GPU:1", "Tesla P100", "6.0")]
    )
    assert env.recommended_policy(with_pascal, gpu_available=True) == "float32"


# compatibility


def test_compatibility_passes_a_supported_python_and_a_new_driver():
    """TF 2.21 on Python 3.11 with driver 535 and the pip build: no problem, no build note."""
    result = env.check_compatibility("2.21.0", "3.11.7", "535.104.05", build=BUILD)
    assert result["python_ok"] is True and result["driver_ok"] is True
    assert result["problems"] == [] and result["notes"] == []
    assert "no problems found" in result["summary"]


@pytest.mark.parametrize(
    ("tf_version", "python_version", "allowed"),
    [("2.21.0", "3.9.18", "3.10 to 3.13"), ("2.19.0", "3.13.1", "3.9 to 3.12")],
)
def test_compatibility_flags_a_python_the_tensorflow_wheel_does_not_support(
    tf_version, python_version, allowed
):
    """A Python outside the table's range is a problem naming the version and the allowed range."""
    result = env.check_compatibility(tf_version, python_version, "535.104.05")
    assert result["python_ok"] is False
    assert len(result["problems"]) == 1
    assert python_version in result["problems"][0] and allowed in result["problems"][0]


@pytest.mark.parametrize(
    ("driver", "ok"),
    [("470.82.01", False), ("525.60.12", False), ("525.60.13", True), ("560.35", True)],
)
def test_compatibility_checks_the_driver_against_the_cuda_12_minimum(driver, ok):
    """Drivers older than 525.60.13 are a problem that says to update; newer ones pass."""
    result = env.check_compatibility("2.20.0", "3.11.7", driver)
    assert result["driver_ok"] is ok
    if ok:
        assert result["problems"] == []
    else:
        assert driver in result["problems"][0] and "525.60.13" in result["problems"][0]
        assert "update the driver" in result["problems"][0]


def test_compatibility_says_when_tensorflow_is_not_in_the_table():
    """An unknown TensorFlow version is reported as unchecked, not silently passed."""
    result = env.check_compatibility("2.99.0", "3.11.7", "535.104.05")
    assert result["expected"] is None and result["python_ok"] is None
    assert "2.99.0 is not in the compatibility table" in result["problems"][0]
    assert "not checked" in result["summary"]


def test_compatibility_notes_no_driver_and_an_unusual_build():
    """No driver is a note (CPU only), and a build for another CUDA than the table is noted."""
    build = {**BUILD, "cuda_version": "11.8", "cudnn_version": "8"}
    result = env.check_compatibility("2.21.0", "3.11.7", None, build=build)
    assert result["driver_ok"] is None and result["problems"] == []
    assert any("No NVIDIA driver found" in note for note in result["notes"])
    assert any("CUDA 11.8" in note for note in result["notes"])
    assert any("cuDNN 8" in note for note in result["notes"])


def test_compatibility_flags_a_gpu_older_than_the_build_supports():
    """A compute capability 5.2 GPU is below the sm_60 this TensorFlow was built for."""
    result = env.check_compatibility(
        "2.21.0", "3.11.7", "535.104.05", build=BUILD, compute_capabilities=["5.2", "8.0"]
    )
    assert len(result["problems"]) == 1 and "5.2" in result["problems"][0]


def test_table_covers_the_baked_tensorflow_and_renders_as_markdown():
    """The TensorFlow minor this project was made for is in the table the notebook shows."""
    assert BAKED_TENSORFLOW in env.COMPATIBILITY
    table = env.compatibility_table_markdown()
    assert f"| {BAKED_TENSORFLOW} |" in table
    assert len(table.splitlines()) == 2 + len(env.COMPATIBILITY)


# verdict and text


def test_verdict_without_gpu_says_cpu_and_how_to_get_a_gpu():
    """No GPU: the verdict says it runs on CPU and names the gpu extra."""
    text = env.verdict(_fake_report(gpus=[], driver_version=None))
    assert text.startswith("No GPU — running on CPU")
    assert 'pip install -e ".[gpu]"' in text
    assert "No NVIDIA driver was found" in text


def test_verdict_without_gpu_but_with_driver_points_at_missing_cuda_libraries():
    """A driver but no GPU in TensorFlow: the verdict says the CUDA libraries are likely missing."""
    text = env.verdict(_fake_report(gpus=[], driver_version="535.104.05"))
    assert "535.104.05" in text and "CUDA libraries" in text


def test_verdict_with_gpus_gives_count_policy_and_problems():
    """Two GPUs on an old driver: count, model, policy and the driver problem are all stated."""
    gpus = [_gpu("GPU:0", "NVIDIA A100", "8.0"), _gpu("GPU:1", "NVIDIA A100", "8.0")]
    text = env.verdict(_fake_report(gpus=gpus, driver_version="470.82.01"))
    assert text.startswith("2 GPU(s): NVIDIA A100 (compute capability 8.0).")
    assert "mixed_float16" in text
    assert "Problems:" in text and "470.82.01" in text


def test_verdict_with_a_healthy_gpu_finds_no_problems():
    """One recent GPU with a new driver: the verdict says no problems were found."""
    text = env.verdict(
        _fake_report(gpus=[_gpu("GPU:0", "Tesla T4", "7.5")], driver_version="550.54")
    )
    assert "1 GPU(s)" in text and "mixed_float16" in text and "No problems found." in text


def test_format_report_lists_every_gpu_and_the_verdict():
    """The doctor text names each device, its capability and timing, and ends with the verdict."""
    report = _fake_report(gpus=[_gpu("GPU:0", "Tesla T4", "7.5")], driver_version="550.54")
    text = env.format_report(report)
    assert "GPU:0 (Tesla T4, compute capability 7.5)" in text
    assert "on CPU:0: 100.0 GFLOP/s\n" in text
    assert "on GPU:0: 1234.5 GFLOP/s, 12.3x the CPU" in text
    assert text.splitlines()[-1] == f"Verdict: {report['verdict']}"


# the real check on this machine


def test_collect_report_measures_this_machine():
    """The real report: devices as TensorFlow sees them, positive finite GFLOP/s, valid JSON."""
    report = env.collect_report(matmul_size=64, matmul_repeats=2)
    has_gpu = bool(tf.config.list_physical_devices("GPU"))
    assert report["gpu_available"] is has_gpu
    assert report["device_used"] == ("GPU" if has_gpu else "CPU")
    assert report["memory_growth"]["status"] in (("enabled",) if has_gpu else ("no GPU",))
    assert [row["device"] for row in report["matmul"]][0] == "CPU:0"
    assert len(report["matmul"]) == 1 + len(report["gpus"])
    for row in report["matmul"]:
        assert row["size"] == 64 and row["gflops"] > 0 and math.isfinite(row["gflops"])
    assert report["matmul"][0]["speedup_vs_cpu"] == 1.0
    assert report["xla"][0] == {
        "device": "CPU:0",
        "ok": True,
        "reason": "a jit_compile=True function compiled and ran",
    }
    assert report["tensorflow_version"] == tf.__version__
    assert json.loads(json.dumps(report)) == report
    assert report["verdict"] in env.format_report(report)


@pytest.mark.parametrize(("size", "repeats"), [(0, 2), (64, 0), (64.5, 2), (True, 2)])
def test_bad_matmul_parameters_are_refused_before_any_work(size, repeats):
    """A size or count that is not a positive whole number gets one sentence naming the value."""
    with pytest.raises(env.EnvError, match="is not allowed: use a whole number"):
        env.collect_report(matmul_size=size, matmul_repeats=repeats)


# the step contract


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"matmul_size": 0}, "matmul_size=0"),
        ({"matmul_size": 100_000}, "matmul_size=100000"),
        ({"matmul_repeats": -5}, "matmul_repeats=-5"),
    ],
)
def test_check_refuses_a_bad_value_in_one_sentence_and_writes_nothing(tmp_path, values, named):
    """The runner's pre-flight (inputs=False) names the value; the run folder is not created."""
    run = tmp_path / "run"
    with pytest.raises(env.EnvError) as refused:
        env.check(run, env.Params(**values), inputs=False)
    assert named in str(refused.value)
    assert_one_sentence(str(refused.value))
    assert not run.exists()


def test_run_writes_the_report_with_its_lineage(tmp_path, capsys):
    """env.run measures once and writes metrics/environment.json itself, lineage included."""
    report = env.run(tmp_path, env.Params(matmul_size=32, matmul_repeats=1))
    written = json.loads((tmp_path / artifacts.METRICS_DIR / "environment.json").read_text())
    assert written == json.loads(json.dumps(report))
    assert report["lineage"] == {"reads": {}, "writes": {}}
    assert report["matmul"][0]["size"] == 32 and report["matmul"][0]["repeats"] == 1
    assert report["memory_growth"]["status"] in ("enabled", "no GPU", "already initialized")
    assert f"Verdict: {report['verdict']}" in capsys.readouterr().out


def _doctor(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", PACKAGE, "doctor", "--matmul-size", "64", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_doctor_prints_the_report_and_the_verdict():
    """`doctor` exits 0 and prints the findings with the verdict last."""
    done = _doctor()
    assert done.returncode == 0, done.stderr
    assert "Matmul 64x64 float32 on CPU:0" in done.stdout
    assert done.stdout.strip().splitlines()[-1].startswith("Verdict: ")


def test_doctor_json_is_the_report():
    """`doctor --json` prints the report as JSON that tools can read."""
    done = _doctor("--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["gpu_available"] is bool(tf.config.list_physical_devices("GPU"))
    assert report["device_used"] in ("CPU", "GPU") and report["verdict"]
    assert report["matmul"][0]["size"] == 64


@pytest.mark.gpu
def test_memory_growth_is_enabled_on_every_gpu():
    """On a GPU machine, doctor switches memory growth on for every GPU before using them."""
    done = _doctor("--json")  # a fresh process: this one may have initialized its GPUs already
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    growth = report["memory_growth"]
    assert report["device_used"] == "GPU"
    assert growth["status"] == "enabled", growth["message"]
    assert len(growth["enabled"]) == len(report["gpus"]) > 0
    assert all(growth["enabled"].values())


# helpers


def _gpu(device: str, model: str, capability: str) -> dict[str, str]:
    return {
        "device": device,
        "name": f"/physical_device:{device}",
        "model": model,
        "compute_capability": capability,
    }


def _fake_report(gpus: list[dict[str, str]], driver_version: str | None) -> dict:
    """A report as collect_report builds it, for a machine that is not this one."""
    driver = {
        "found": driver_version is not None,
        "version": driver_version,
        "gpus": [],
        "message": f"NVIDIA driver {driver_version}"
        if driver_version
        else "no NVIDIA driver found",
    }
    capabilities = [gpu["compute_capability"] for gpu in gpus]
    rows = env.mixed_precision_support(gpus)
    report = {
        "gpu_available": bool(gpus),
        "device_used": "GPU" if gpus else "CPU",
        "gpus": gpus,
        "cpu": {"device": "CPU:0", "machine": "x86_64", "system": "Linux", "cores": 8},
        "tensorflow_version": "2.21.0",
        "python_version": "3.11.7",
        "build": BUILD,
        "driver": driver,
        "compatibility": env.check_compatibility(
            "2.21.0", "3.11.7", driver_version, build=BUILD, compute_capabilities=capabilities
        ),
        "memory_growth": {
            "status": "enabled" if gpus else "no GPU",
            "enabled": {gpu["name"]: True for gpu in gpus},
            "TF_FORCE_GPU_ALLOW_GROWTH": None,
            "message": "Memory growth on." if gpus else "No GPU visible.",
        },
        "xla": [{"device": "CPU:0", "ok": True, "reason": "compiled"}],
        "mixed_precision": rows,
        "matmul": [{"device": "CPU:0", "size": 1024, "gflops": 100.0, "speedup_vs_cpu": 1.0}]
        + [
            {"device": gpu["device"], "size": 1024, "gflops": 1234.5, "speedup_vs_cpu": 12.345}
            for gpu in gpus
        ],
        "recommended_policy": env.recommended_policy(rows, bool(gpus)),
    }
    report["verdict"] = env.verdict(report)
    return report


def test_the_xla_check_is_a_table_not_a_raw_list():
    """00_environment shows it as a table: a row per device, ok or failed, and why."""
    report = _fake_report(gpus=[], driver_version=None)
    report["xla"].append({"device": "GPU:0", "ok": False, "reason": "no kernel | for op\nFoo"})
    lines = env.report.xla_table(report).splitlines()
    assert lines[:3] == ["| device | XLA | why |", "|---|---|---|", "| CPU:0 | ok | compiled |"]
    assert lines[3] == "| GPU:0 | failed | no kernel \\| for op Foo |"
