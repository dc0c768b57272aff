"""cache="auto" sizes its budget from the memory this job may really use: the machine's
MemAvailable read in kB, the job's cgroup limit (v1 or v2) when it is smaller, every channel."""

from __future__ import annotations

from pathlib import Path

import pytest

from {{ cookiecutter.package_name }}.data import cache

GIB = 1024**3
MEMINFO = "MemTotal:       65536000 kB\nMemFree:         1024000 kB\nMemAvailable:   {kb} kB\n"


def machine(root: Path, available_kb: int, cgroup_line: str = "0::/\n") -> tuple[Path, Path]:
    """A /proc (meminfo, self/cgroup) and an empty /sys/fs/cgroup under `root`."""
    proc, groups = root / "proc", root / "cgroup"
    (proc / "self").mkdir(parents=True)
    groups.mkdir()
    (proc / "meminfo").write_text(MEMINFO.format(kb=available_kb))
    (proc / "self" / "cgroup").write_text(cgroup_line)
    return proc, groups


def limit(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def test_meminfo_available_is_read_in_kilobytes(tmp_path: Path) -> None:
    """The real parser on a meminfo text: 2,048,000 kB is 2,097,152,000 bytes, not 2,048,000."""
    proc, groups = machine(tmp_path, 2_048_000)
    assert cache.available_memory(proc, groups) == 2_048_000 * 1024
    assert cache.meminfo_available("MemTotal: 5 kB\n") is None


def test_a_cgroup_v2_limit_below_the_machines_memory_is_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Slurm job of 1 GiB on a 60 GiB machine: room is the limit less the working set (usage
    less inactive file pages); a tighter parent wins; "max" is no limit; decide() uses it."""
    proc, groups = machine(tmp_path, 60 * GIB // 1024, "0::/slurm/job_7\n")
    job = groups / "slurm" / "job_7"
    stat = "anon 268435456\ninactive_file 268435456\n"
    limit(job, {"memory.max": f"{GIB}\n", "memory.current": f"{GIB // 2}\n", "memory.stat": stat})
    limit(groups / "slurm", {"memory.max": "max\n", "memory.current": f"{GIB}\n"})
    assert cache.available_memory(proc, groups) == GIB - (GIB // 2 - GIB // 4)
    limit(groups / "slurm", {"memory.max": f"{GIB // 2}\n", "memory.current": "0\n"})
    assert cache.available_memory(proc, groups) == GIB // 2
    monkeypatch.setattr(cache, "PROC", proc)
    monkeypatch.setattr(cache, "CGROUP", groups)
    decided = cache.decide("auto", 4000, (224, 224, 3))  # 602 MB: fits the machine, not the job
    assert decided["cache"] is False
    assert decided["cache_budget_bytes"] == int(GIB // 2 * cache.CACHE_SHARE)


def test_a_cgroup_v1_limit_counts_and_its_no_limit_number_does_not(tmp_path: Path) -> None:
    """v1 (memory.limit_in_bytes): a container sees its own cgroup at the mount's root, though
    /proc/self/cgroup names a path; 9223372036854771712 means no limit: meminfo decides."""
    proc, groups = machine(
        tmp_path, 8_000_000, "5:cpu,cpuacct:/kubepods/abc\n12:memory:/kubepods/abc\n"
    )
    files = {"memory.usage_in_bytes": f"{GIB}\n", "memory.stat": "total_inactive_file 0\n"}
    limit(groups / "memory", {"memory.limit_in_bytes": f"{2 * GIB}\n", **files})
    assert cache.available_memory(proc, groups) == GIB
    limit(groups / "memory", {"memory.limit_in_bytes": "9223372036854771712\n"})
    assert cache.available_memory(proc, groups) == 8_000_000 * 1024


def test_the_budget_counts_every_channel(monkeypatch: pytest.MonkeyPatch) -> None:
    """10,000 RGB images of 224x224 are 1.5 GB, over a 1 GB budget; the same in grey fit."""
    monkeypatch.setattr(cache, "available_memory", lambda: 4 * 10**9)
    rgb = cache.decide("auto", 10_000, (224, 224, 3))
    grey = cache.decide("auto", 10_000, (224, 224, 1))
    assert rgb["cache_bytes"] == 10_000 * 224 * 224 * 3 and rgb["cache"] is False
    assert grey["cache_bytes"] == 10_000 * 224 * 224 and grey["cache"] is True
