"""cache="auto" sizes its budget from the memory this job may really use: the machine's
MemAvailable read in kB, the job's cgroup limit (v1 or v2) when it is smaller, every channel."""

from __future__ import annotations

from pathlib import Path

import pytest

from {{ cookiecutter.package_name }}.tasks.image import cache

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


def test_decide_says_why_in_one_sentence_with_the_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget is 25 % of what is available, rounded down; equal to it still fits."""
    monkeypatch.setattr(cache, "available_memory", lambda: 4_000_000_003)
    fits = cache.decide("auto", 1, (1000, 1000, 1000))  # exactly the 1,000,000,000 budget
    assert fits == {
        "cache": True,
        "cache_setting": "auto",
        "cache_bytes": 10**9,
        "cache_budget_bytes": 10**9,
        "cache_reason": "Caching in memory: the decoded images (1.0 GB) fit 25% of the available "
        "memory.",
    }
    over = cache.decide("auto", 1001, (1000, 1000, 1))
    assert (over["cache"], over["cache_reason"]) == (
        False,
        "Not caching in memory: the decoded images (1.0 GB) exceed 25% of the available memory "
        "(1.0 GB), so every epoch reads and decodes the shards.",
    )
    assert cache.decide(True, 3, (2, 2, 1))["cache_reason"] == (
        "Caching in memory: cache=True was asked for (12 bytes decoded)."
    )
    never = cache.decide(False, 3, (20, 20, 3))
    assert (never["cache"], never["cache_setting"], never["cache_reason"]) == (
        False,
        False,
        "Not caching in memory: cache=False was asked for (3.6 kB decoded).",
    )
    monkeypatch.setattr(cache, "available_memory", lambda: None)
    unknown = cache.decide("auto", 2, (1000, 1000, 3))
    assert (unknown["cache"], unknown["cache_budget_bytes"], unknown["cache_reason"]) == (
        False,
        None,
        "Not caching in memory: the available memory is unknown here, so 6.0 MB is not cached.",
    )


def test_only_auto_true_and_false_are_cache_settings() -> None:
    for good in ("auto", True, False):
        cache.check_cache(good)
    for bad in ("yes", 1, 0, None, "AUTO"):
        with pytest.raises(cache.DataError) as refused:
            cache.check_cache(bad)
        assert str(refused.value) == (
            f"cache={bad!r} is not allowed: use 'auto' (in memory when the decoded images fit "
            "25% of the available memory), True (always) or False (never)."
        )


def test_without_meminfo_the_machine_s_free_pages_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No /proc/meminfo MemAvailable (an old kernel): free pages x page size, for /proc only."""
    real = cache._text
    monkeypatch.setattr(cache, "_text", lambda path: None if path.name == "meminfo" else real(path))
    sizes = {"SC_AVPHYS_PAGES": 1000, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(cache.os, "sysconf", sizes.__getitem__)
    assert cache.available_memory(Path("/proc"), tmp_path) == 4_096_000
    proc, groups = machine(tmp_path, 5)
    assert cache.available_memory(proc, groups) is None  # another /proc: no fallback

    def unknown(name: str) -> int:
        raise ValueError(f"unrecognized configuration name {name}")

    monkeypatch.setattr(cache.os, "sysconf", unknown)
    assert cache.available_memory(Path("/proc"), tmp_path) is None


def test_meminfo_lines_that_are_not_a_number_of_kb_are_no_answer() -> None:
    assert cache.meminfo_available("MemAvailable:\nMemAvailable: 7 kB\n") == 7 * 1024
    assert cache.meminfo_available("MemAvailable: lots kB\n") is None
    assert cache.meminfo_available("MemAvailable2: 7 kB\n") is None
    assert cache.meminfo_available(None) is None


def test_a_full_cgroup_has_no_room_and_other_controllers_are_not_read(tmp_path: Path) -> None:
    """Usage over the limit is 0 bytes of room, not a negative; a cpu-only line is skipped; a job
    nested two levels deep is limited by its grandparent too."""
    proc, groups = machine(tmp_path, 8_000_000, "3:cpu:/a\n0::/a/b/c\n")
    limit(groups / "a", {"memory.max": "1000\n", "memory.current": "200\n"})
    limit(groups / "a" / "b" / "c", {"memory.max": "5000\n", "memory.current": "100\n"})
    limit(groups / "a" / "b", {"memory.max": "max\n"})
    limit(groups / "memory" / "a", {"memory.limit_in_bytes": "10\n"})  # v1 files of a cpu line
    assert cache.cgroup_room(proc, groups) == 800
    limit(groups / "a" / "b" / "c", {"memory.current": "9000\n", "memory.stat": "x\n"})
    assert cache.cgroup_room(proc, groups) == 0
    assert cache.available_memory(proc, groups) == 0
    (proc / "self" / "cgroup").write_text("3:cpu:/a\n")
    assert cache.cgroup_room(proc, groups) is None


def test_sizes_are_said_in_the_largest_unit_that_fits() -> None:
    sizes = [999, 1000, 999_999, 10**6, 10**9, 2_500_000_000_000]
    assert [cache._size(count) for count in sizes] == [
        "999 bytes",
        "1.0 kB",
        "1,000.0 kB",
        "1.0 MB",
        "1.0 GB",
        "2,500.0 GB",
    ]


def test_cgroup_paths_with_colons_and_shared_v1_controllers_are_read(tmp_path: Path) -> None:
    """A containerd cgroup name holds colons; a v1 memory controller may share its hierarchy
    (memory,hugetlb); 2**60 bytes and more is cgroup v1's "no limit", less is a limit."""
    path = "/Xkube.slice/cri-containerd:abc:def"
    proc, groups = machine(tmp_path, 8_000_000, f"0::{path}\n")
    limit(groups / path.lstrip("/"), {"memory.max": "3000\n", "memory.current": "1000\n"})
    assert cache.cgroup_room(proc, groups) == 2000
    (proc / "self" / "cgroup").write_text("7:memory,hugetlb:/job\n")
    limit(groups / "memory" / "job", {"memory.limit_in_bytes": f"{2**60}\n"})
    assert cache.cgroup_room(proc, groups) is None
    limit(groups / "memory" / "job", {"memory.limit_in_bytes": f"{2**60 - 1}\n"})
    assert cache.cgroup_room(proc, groups) == 2**60 - 1
    assert cache.meminfo_available("MemAvailable: 7\n") == 7 * 1024  # the unit left out
