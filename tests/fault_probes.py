"""Fault probes: the bad-input and fault cases of issue 27 §2, rerun against a baked project.

Not a pytest module (each probe has its unit test in the baked project); this reruns them the way a
hostile but realistic user would, on a real run folder, and prints each one's class:
  clean      refused in a short message without a traceback (or, where that is right, handled)
  silent     exit status 0 where a refusal belongs, or a message the probe expected is missing
  traceback  a Python traceback reached the user
  loss       an earlier good file changed
  skipped    the probe needs something this machine lacks (root for mounts), said why
Usage (from the template's root; `make probes` bakes the default project first):
    python tests/fault_probes.py PROJECT_DIR [--base RUN_DIR] [--only NAME ...]
PROJECT_DIR is a baked project whose package is importable with PYTHONPATH=PROJECT_DIR/src.
Without --base it runs the smoke profile once into PROJECT_DIR/artifacts/probe-base (about 2 min).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "tf_gpu_project"
TEMPLATE = Path(__file__).resolve().parents[1]
TRACEBACK = "Traceback (most recent call last)"


@dataclass
class Ctx:
    project: Path
    base: Path
    scratch: Path
    python: str = sys.executable
    log: list[str] = field(default_factory=list)

    def env(self) -> dict[str, str]:
        env = dict(os.environ, PYTHONPATH=str(self.project / "src"), PYTHONUNBUFFERED="1")
        env.pop("TF_GPU_PROJECT_VERBOSE", None)
        return env

    def copy(self, name: str) -> Path:
        """A fresh copy of the base run folder for one probe."""
        dst = self.scratch / name
        if dst.exists():
            shutil.rmtree(dst)
        shutil.copytree(self.base, dst, symlinks=True)
        return dst

    def cli(self, *args: str, timeout: float = 600, cwd: Path | None = None) -> Result:
        cmd = [self.python, "-m", PACKAGE, *args]
        proc = subprocess.run(
            cmd,
            cwd=cwd or self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout + proc.stderr)

    def start(self, *args: str, cwd: Path | None = None) -> subprocess.Popen:
        return subprocess.Popen(
            [self.python, "-m", PACKAGE, *args],
            cwd=cwd or self.project,
            env=self.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )


@dataclass
class Result:
    rc: int
    out: str


@dataclass
class Verdict:
    kind: str  # clean | silent | traceback | loss | skipped
    said: str


def digest(path: Path) -> str:
    if not path.exists():
        return "missing"
    if path.is_dir():
        h = hashlib.sha256()
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(str(f.relative_to(path)).encode())
            h.update(f.read_bytes())
        return h.hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def last_words(out: str) -> str:
    """The message a user reads: the last non-empty lines that are not progress noise."""
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    lines = [ln for ln in lines if not re.match(r"^(I0000|W0000|E0000|WARNING: All log)", ln)]
    return " / ".join(lines[-2:])[:400]


def judge(
    res: Result, refuse: bool, must_say: str | None = None, kept: dict[Path, str] | None = None
) -> Verdict:
    said = last_words(res.out)
    for path, before in (kept or {}).items():
        if digest(path) != before:
            return Verdict("loss", f"{path.name} changed; {said}")
    if TRACEBACK in res.out:
        return Verdict("traceback", said)
    if refuse and res.rc == 0:
        return Verdict("silent", f"exit 0: {said}")
    if not refuse and res.rc != 0:
        return Verdict("traceback" if TRACEBACK in res.out else "silent", f"exit {res.rc}: {said}")
    if must_say and not re.search(must_say, res.out, re.I):
        return Verdict("silent", f"never says /{must_say}/: {said}")
    return Verdict("clean", said)


# ---- mounts (root only): a tiny disk and a read-only folder -------------------------------------
def is_root() -> bool:
    return os.geteuid() == 0


@contextlib.contextmanager
def tiny_disk(where: Path, size_kb: int):
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(where)], check=True
    )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@contextlib.contextmanager
def read_only(folder: Path):
    subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(disk: Path, leave_bytes: int) -> None:
    """Leave about leave_bytes free on the tmpfs at disk."""
    free = shutil.disk_usage(disk).free
    with open(disk / ".filler", "wb") as handle, contextlib.suppress(OSError):
        handle.write(b"\0" * max(0, free - leave_bytes))


def on_tiny_disk(
    ctx: Ctx,
    name: str,
    remove: list[str],
    leave_kb: int,
    *args: str,
    kept: list[str] = (),
    parses: list[str] = (),
) -> Verdict:
    """Run args on a copy of the base run on a tmpfs with leave_kb free: files in kept must not
    change, files in parses must still be whole JSON."""
    if not is_root():
        return Verdict("skipped", "needs root to mount a small tmpfs (a full disk)")
    src = ctx.copy(name + "-src")
    for rel in remove:
        target = src / rel
        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
    size_kb = sum(f.stat().st_size for f in src.rglob("*") if f.is_file()) // 1024 + 4096
    mnt = ctx.scratch / name
    with tiny_disk(mnt, size_kb):
        shutil.copytree(src, mnt, dirs_exist_ok=True, symlinks=True)
        before = {mnt / k: digest(mnt / k) for k in kept}
        fill(mnt, leave_kb * 1024)
        res = ctx.cli(*[a.replace("{RUN}", str(mnt)) for a in args])
        verdict = judge(res, refuse=True, kept=before)
        for rel in parses:
            try:
                json.loads((mnt / rel).read_text())
            except (OSError, ValueError) as exc:
                verdict = Verdict("loss", f"{rel} no longer parses ({exc}); {verdict.said}")
    return verdict


# ---- the probes ----------------------------------------------------------------------------------
PROBES: list[tuple[str, str, Callable[[Ctx], Verdict]]] = []


def probe(section: str):
    def register(fn):
        PROBES.append((fn.__name__, section, fn))
        return fn

    return register


@probe("loss a")
def rebake_keeps_user_files(ctx: Ctx) -> Verdict:
    out = ctx.scratch / "rebake"
    shutil.rmtree(out, ignore_errors=True)
    bake = [
        ctx.python,
        "-m",
        "cookiecutter",
        str(TEMPLATE),
        "--no-input",
        "-f",
        "--output-dir",
        str(out),
    ]
    subprocess.run(bake, check=True, capture_output=True)
    proj = out / "tf-gpu-project"
    own = [proj / "docker" / "MyOwn.Dockerfile", proj / "src" / PACKAGE / "tune" / "mine.py"]
    for f in own:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("# the user's own file\n")
    proc = subprocess.run(
        bake + ["include_docker=no", "include_tuning=no"], capture_output=True, text=True
    )
    lost = [str(f.relative_to(proj)) for f in own if not f.exists()]
    if lost:
        return Verdict("loss", f"re-bake removed {lost}")
    return judge(Result(proc.returncode, proc.stdout + proc.stderr), refuse=False)


@probe("loss b")
def export_over_a_served_version(ctx: Ctx) -> Verdict:
    run = ctx.copy("export-served")
    kept = {run / "export": digest(run / "export")}
    return judge(ctx.cli("export", "--run-dir", str(run)), refuse=True, kept=kept)


def two_versions(ctx: Ctx, name: str) -> Path:
    run = ctx.copy(name)
    ledger_path = run / "serving" / "versions.json"
    ledger = json.loads(ledger_path.read_text())
    for v in ("2", "3"):  # copies of version 1, recorded as 04_export records a parity check
        shutil.copytree(run / "export" / "1", run / "export" / v)
        ledger["exports"][v] = dict(ledger["exports"]["1"])
    ledger_path.write_text(json.dumps(ledger, indent=2))
    return run


@probe("loss c")
def concurrent_label_changes(ctx: Ctx) -> Verdict:
    bad = 0
    rounds = 3
    for _ in range(rounds):
        run = two_versions(ctx, "labels")
        assert ctx.cli("serve", "canary", "--run-dir", str(run), "--version", "2").rc == 0
        assert ctx.cli("serve", "promote", "--run-dir", str(run)).rc == 0
        a = ctx.start("serve", "canary", "--run-dir", str(run), "--version", "3")
        b = ctx.start("serve", "rollback", "--run-dir", str(run))
        outs = [p.communicate()[0] for p in (a, b)]
        if TRACEBACK in "".join(outs):
            return Verdict("traceback", last_words("".join(outs)))
        ledger = json.loads((run / "serving" / "versions.json").read_text())
        config = (run / "serving" / "models.config").read_text()
        ok_a, ok_b = a.returncode == 0, b.returncode == 0
        want_canary = 3 if ok_a else None
        want_stable = 1 if ok_b else 2
        agrees = f"value: {ledger['stable']}" in config
        if ledger.get("stable") != want_stable or ledger.get("canary") != want_canary or not agrees:
            bad += 1
    kind = "clean" if bad == 0 else "loss"
    return Verdict(kind, f"{rounds - bad} of {rounds} rounds: both updates kept, files agree")


@probe("loss d")
def failed_serve_bench_keeps_result(ctx: Ctx) -> Verdict:
    run = ctx.copy("servebench")
    good = run / "metrics" / "serve.json"
    good.write_text(json.dumps({"requests": 100, "answers_per_sec": 321.0}))
    kept = {good: digest(good)}
    res = ctx.cli(
        "serve-bench", "--run-dir", str(run), "--port", "9", "--duration", "2", "--protocol", "rest"
    )
    return judge(res, refuse=True, kept=kept)


@probe("loss e")
def report_on_full_disk(ctx: Ctx) -> Verdict:
    return on_tiny_disk(
        ctx, "fullreport", [], 1, "report", "--run-dir", "{RUN}", kept=["report.html"]
    )


@probe("silent")
def huge_epochs(ctx: Ctx) -> Verdict:
    run = ctx.copy("epochs")
    return judge(ctx.cli("train", "--run-dir", str(run), "-p", "epochs=999999999999"), True)


def untagged_project(ctx: Ctx, name: str, retag_first_code_cell: bool) -> Path:
    """A copy of the project whose 00_environment lost its parameters tag (or had it moved to the
    first code cell, which does not set run_dir)."""
    proj = ctx.scratch / name
    shutil.rmtree(proj, ignore_errors=True)
    shutil.copytree(ctx.project, proj, ignore=shutil.ignore_patterns("artifacts", ".venv", "build"))
    nb_path = proj / "notebooks" / "00_environment.ipynb"
    nb = json.loads(nb_path.read_text())
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "parameters" in tags:
            tags.remove("parameters")
    if retag_first_code_cell:  # a setup cell above the real parameters cell gets the tag
        setup = {
            "cell_type": "code",
            "execution_count": None,
            "id": "setup-cell",
            "outputs": [],
            "metadata": {"tags": ["parameters"]},
            "source": "import os",
        }
        first = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code")
        nb["cells"].insert(first, setup)
    nb_path.write_text(json.dumps(nb, indent=1))
    return proj


@probe("silent")
def notebook_without_parameters_tag(ctx: Ctx) -> Verdict:
    proj = untagged_project(ctx, "untagged", retag_first_code_cell=False)
    res = ctx.cli(
        "run",
        "--only",
        "00",
        "--project-dir",
        str(proj),
        "--run-dir",
        str(ctx.scratch / "untagged-run"),
        cwd=proj,
    )
    return judge(res, refuse=True)


@probe("silent")
def parameters_tag_moved_to_a_setup_cell(ctx: Ctx) -> Verdict:
    proj = untagged_project(ctx, "retagged", retag_first_code_cell=True)
    (proj / "configs" / "empty.yaml").write_text("{}\n")  # no value passed but the run folder
    res = ctx.cli(
        "run",
        "--only",
        "00",
        "--profile",
        "empty",
        "--project-dir",
        str(proj),
        "--run-dir",
        str(ctx.scratch / "retagged-run"),
        cwd=proj,
    )
    return judge(res, refuse=True)


def export_after_replaced_data(ctx: Ctx, name: str, ledger: str | None) -> Verdict:
    run = ctx.copy(name)
    res = ctx.cli("data", "--run-dir", str(run), "-p", "seed=7")  # replaced data
    if res.rc != 0:
        return Verdict("silent", f"could not replace the data: {last_words(res.out)}")
    lineage = run / "lineage.json"
    if ledger is None:
        lineage.unlink()
    else:
        lineage.write_text(ledger)
    res = ctx.cli("export", "--run-dir", str(run), "-p", "version=2")
    return judge(res, refuse=True)


@probe("silent")
def missing_lineage_then_export(ctx: Ctx) -> Verdict:
    return export_after_replaced_data(ctx, "nolineage", None)


@probe("silent")
def corrupt_lineage_then_export(ctx: Ctx) -> Verdict:
    return export_after_replaced_data(ctx, "badlineage", "{not json")


@probe("silent")
def two_runs_one_folder(ctx: Ctx) -> Verdict:
    run = ctx.scratch / "tworuns"
    shutil.rmtree(run, ignore_errors=True)
    a = ctx.start("run", "--only", "00", "--profile", "smoke", "--run-dir", str(run))
    time.sleep(3)
    b = ctx.start("run", "--only", "00", "--profile", "smoke", "--run-dir", str(run))
    out_a, out_b = a.communicate()[0], b.communicate()[0]
    if TRACEBACK in out_a + out_b:
        return Verdict("traceback", last_words(out_a + out_b))
    if a.returncode == 0 and b.returncode == 0:
        return Verdict("silent", "both runs said ok")
    return Verdict("clean", f"first rc {a.returncode}; second: {last_words(out_b)}")


@probe("silent")
def corrupt_train_metrics_in_report(ctx: Ctx) -> Verdict:
    run = ctx.copy("badmetrics")
    (run / "metrics" / "train.json").write_text("{trunc")
    res = ctx.cli("report", "--run-dir", str(run))
    verdict = judge(res, refuse=False)
    report = (run / "report.md").read_text()
    wrong = "No `metrics/train.json` in this run folder" in report
    if verdict.kind == "clean" and (wrong or "cannot be read" not in report):
        return Verdict("silent", "report.md does not say metrics/train.json cannot be read")
    said = next((ln for ln in report.splitlines() if "cannot be read" in ln), verdict.said)
    return Verdict(verdict.kind, said)


@probe("silent")
def readme_says_jinja_answers_render(ctx: Ctx) -> Verdict:
    text = (TEMPLATE / "README.md").read_text()
    ok = re.search(r"jinja", text, re.I) and re.search(r"cruft", text, re.I)
    return Verdict(
        "clean" if ok else "silent",
        "README names cruft and Jinja answers"
        if ok
        else "README is silent about Jinja answers under cruft",
    )


def meta_of_shape(ctx: Ctx, name: str, text: str) -> Verdict:
    run = ctx.copy(name)
    (run / "data" / "meta.json").write_text(text)
    return judge(ctx.cli("train", "--run-dir", str(run), "-p", "epochs=1"), refuse=True)


@probe("ugly")
def meta_json_empty_object(ctx: Ctx) -> Verdict:
    return meta_of_shape(ctx, "meta-obj", "{}")


@probe("ugly")
def meta_json_list(ctx: Ctx) -> Verdict:
    return meta_of_shape(ctx, "meta-list", "[]")


def with_ledger(ctx: Ctx, name: str, text: str, *args: str) -> Verdict:
    run = two_versions(ctx, name)
    (run / "serving" / "versions.json").write_text(text)
    res = ctx.cli(*[a.replace("{RUN}", str(run)) for a in args])
    if args[0] == "export" and (run / "export" / "4").exists():
        return Verdict("loss", f"export/4 written with an unreadable ledger; {last_words(res.out)}")
    return judge(res, refuse=True)


for _text, _tag in (("{", "corrupt"), ("", "empty"), ("[]", "list")):
    for _args in (
        ("serve", "status"),
        ("serve", "canary", "--version", "2"),
        ("serve", "promote", "--version", "2"),
        ("serve", "rollback"),
        ("export", "-p", "version=4"),
    ):

        def _make(text=_text, args=_args, tag=_tag):
            def fn(ctx: Ctx) -> Verdict:
                cmd = (
                    [*args[:2], "--run-dir", "{RUN}", *args[2:]]
                    if args[0] == "serve"
                    else [args[0], "--run-dir", "{RUN}", *args[1:]]
                )
                return with_ledger(ctx, f"ledger-{tag}", text, *cmd)

            fn.__name__ = f"versions_json_{tag}_{'_'.join(a for a in args[:2] if a[0] != '-')}"
            return fn

        probe("ugly")(_make())


@probe("ugly")
def relative_run_folder_outside_a_project(ctx: Ctx) -> Verdict:
    with tempfile.TemporaryDirectory(prefix="outside-") as outside:  # above it: no project
        return judge(ctx.cli("serve", "status", "--run-dir", "rel", cwd=Path(outside)), True)


@probe("ugly")
def models_config_missing_in_status(ctx: Ctx) -> Verdict:
    run = ctx.copy("nomodelsconfig")
    (run / "serving" / "models.config").unlink()
    return judge(ctx.cli("serve", "status", "--run-dir", str(run)), refuse=True)


@probe("ugly")
def models_config_corrupt_in_status(ctx: Ctx) -> Verdict:
    run = ctx.copy("badmodelsconfig")
    (run / "serving" / "models.config").write_text("model_config_list { config { name: ")
    return judge(ctx.cli("serve", "status", "--run-dir", str(run)), refuse=True)


for _weight in ("nan", "inf", "-1", "abc"):

    def _make_label(weight=_weight):
        def fn(ctx: Ctx) -> Verdict:
            run = ctx.copy("label")
            return judge(
                ctx.cli(
                    "serve-bench",
                    "--run-dir",
                    str(run),
                    "--label",
                    f"stable={weight}",
                    "--duration",
                    "1",
                    "--port",
                    "9",
                ),
                True,
            )

        fn.__name__ = f"serve_bench_label_stable_{weight.replace('-', 'minus')}"
        return fn

    probe("ugly")(_make_label())


for _text, _tag in (("[]", "list"), ('{"steps": 5}', "steps_number"), ("{", "corrupt")):

    def _make_runjson(text=_text, tag=_tag):
        def fn(ctx: Ctx) -> Verdict:
            run = ctx.copy("runjson")
            (run / "run.json").write_text(text)
            return judge(ctx.cli("report", "--run-dir", str(run)), refuse=True)

        fn.__name__ = f"report_on_run_json_{tag}"
        return fn

    probe("ugly")(_make_runjson())


@probe("ugly")
def report_on_an_empty_metrics_folder_out_of_its_project(ctx: Ctx) -> Verdict:
    with tempfile.TemporaryDirectory(prefix="copied-") as outside:
        (Path(outside) / "run" / "metrics").mkdir(parents=True)
        return judge(ctx.cli("report", "--run-dir", f"{outside}/run"), refuse=False)


@probe("ugly")
def report_on_read_only_folder(ctx: Ctx) -> Verdict:
    if not is_root():
        return Verdict("skipped", "needs root for a read-only bind mount")
    run = ctx.copy("roreport")
    kept = {run / "report.html": digest(run / "report.html")}
    with read_only(run):
        res = ctx.cli("report", "--run-dir", str(run))
    return judge(res, refuse=True, kept=kept)


@probe("ugly")
def serve_promote_on_read_only_folder(ctx: Ctx) -> Verdict:
    if not is_root():
        return Verdict("skipped", "needs root for a read-only bind mount")
    run = two_versions(ctx, "ropromote")
    assert ctx.cli("serve", "canary", "--run-dir", str(run), "--version", "2").rc == 0
    kept = {run / "serving": digest(run / "serving")}
    with read_only(run / "serving"):
        res = ctx.cli("serve", "promote", "--run-dir", str(run))
    return judge(res, refuse=True, kept=kept)


@probe("ugly")
def full_disk_under_data(ctx: Ctx) -> Verdict:
    return on_tiny_disk(ctx, "fulldata", ["data"], 8, "data", "--run-dir", "{RUN}")


@probe("ugly")
def full_disk_saving_model(ctx: Ctx) -> Verdict:
    return on_tiny_disk(
        ctx,
        "fullmodel",
        ["checkpoints"],
        64,
        "train",
        "--run-dir",
        "{RUN}",
        "-p",
        "epochs=1",
        kept=["model.keras"],
    )


@probe("ugly")
def full_disk_in_export(ctx: Ctx) -> Verdict:
    return on_tiny_disk(
        ctx,
        "fullexport",
        [],
        64,
        "export",
        "--run-dir",
        "{RUN}",
        "-p",
        "version=2",
        kept=["export/1"],
    )


@probe("ugly")
def full_disk_saving_run_json(ctx: Ctx) -> Verdict:
    return on_tiny_disk(
        ctx,
        "fullrun",
        [],
        16,
        "run",
        "--only",
        "00",
        "--profile",
        "smoke",
        "--run-dir",
        "{RUN}",
        parses=["run.json"],
    )


def descendants(pid: int) -> list[int]:
    kids: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            kids.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for kid in kids.get(todo.pop(), []):
            out.append(kid)
            todo.append(kid)
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(check: Callable[[], bool], seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return False


@probe("ugly")
def sigterm_to_the_runner(ctx: Ctx) -> Verdict:
    run = ctx.copy("sigterm")
    shutil.rmtree(run / "checkpoints", ignore_errors=True)
    proc = ctx.start(
        "run",
        "--only",
        "03",
        "--profile",
        "smoke",
        "-p",
        "03_train.epochs=500",
        "--run-dir",
        str(run),
    )
    log = run / "notebooks" / "03_train.kernel.log"
    started = wait_for(lambda: (run / "checkpoints" / "checkpoint").exists(), 240)
    kernels = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=120)[0]
    time.sleep(2)
    left = [p for p in kernels if alive(p)]
    runs = json.loads((run / "run.json").read_text())
    status = runs.get("status")
    said = f"rc {proc.returncode}; run.json status {status}; kernels left {left}; {last_words(out)}"
    if not started:
        return Verdict("skipped", f"03_train never checkpointed within 240 s ({log})")
    if TRACEBACK in out:
        return Verdict("traceback", said)
    bad = status == "running" or left
    return Verdict("silent" if bad else "clean", said)


@probe("ugly")
def kill9_during_export(ctx: Ctx) -> Verdict:
    run = ctx.copy("kill9export")
    shutil.rmtree(run / "export" / "1")
    (run / "serving" / "versions.json").unlink()
    (run / "serving" / "models.config").unlink()
    proc = ctx.start("run", "--only", "04", "--profile", "smoke", "--run-dir", str(run))
    seen = wait_for(lambda: any((run / "export").glob(".1.tmp-*")), 240)
    kernels = descendants(proc.pid)
    proc.kill()
    proc.wait()
    time.sleep(20)
    left = [p for p in kernels if alive(p)]
    for p in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    stale = sorted(p.name for p in (run / "export").glob(".*tmp*"))
    res = ctx.cli("export", "--run-dir", str(run))
    after = sorted(p.name for p in (run / "export").glob(".*tmp*"))
    said = (
        f"temp seen {seen}; kernels alive 20 s after kill -9 {left}; left behind {stale}; "
        f"after the next export {after}; {last_words(res.out)}"
    )
    if TRACEBACK in res.out:
        return Verdict("traceback", said)
    return Verdict("clean" if not after and not left and res.rc == 0 else "silent", said)


@probe("security")
def secrets_stay_out(ctx: Ctx) -> Verdict:
    secrets = [
        ".env",
        ".envrc",
        ".aws/credentials",
        ".kaggle/kaggle.json",
        "id_rsa",
        "cert.p12",
        ".pypirc",
        "service-account.json",
        "secrets.toml",
        "server.pem",
        "server.key",
    ]
    proj = ctx.scratch / "secrets"
    shutil.rmtree(proj, ignore_errors=True)
    shutil.copytree(
        ctx.project, proj, ignore=shutil.ignore_patterns("artifacts", ".venv", "build", ".git")
    )
    subprocess.run(["git", "init", "-q"], cwd=proj, check=True)
    for s in secrets:
        (proj / s).parent.mkdir(parents=True, exist_ok=True)
        (proj / s).write_text("secret\n")
    out = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=proj,
        capture_output=True,
        text=True,
    ).stdout
    in_git = [s for s in secrets if s in out]
    docker = proj / ".dockerignore"
    missing = []
    if docker.exists():
        from fnmatch import fnmatch

        rules = [
            r.strip()
            for r in docker.read_text().splitlines()
            if r.strip() and not r.startswith("#")
        ]
        for s in secrets:
            parts = Path(s).parts
            hit = any(
                fnmatch(s, r.removeprefix("**/"))
                or fnmatch(s, r)
                or any(fnmatch(p, r.removeprefix("**/")) for p in parts)
                for r in rules
            )
            if not hit:
                missing.append(s)
    if in_git or missing:
        return Verdict("loss", f"git would take {in_git}; the Docker context takes {missing}")
    return Verdict("clean", f"{len(secrets)} secret files: ignored by git and by .dockerignore")


def smoke_base(ctx_project: Path, python: str) -> Path:
    base = ctx_project / "artifacts" / "probe-base"
    if (
        not (base / "run.json").exists()
        or json.loads((base / "run.json").read_text()).get("status") != "ok"
    ):
        shutil.rmtree(base, ignore_errors=True)
        env = dict(os.environ, PYTHONPATH=str(ctx_project / "src"))
        subprocess.run(
            [python, "-m", PACKAGE, "run", "--profile", "smoke", "--run-dir", str(base)],
            cwd=ctx_project,
            env=env,
            check=True,
        )
    return base


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--base", type=Path)
    parser.add_argument("--only", nargs="*", default=[])
    args = parser.parse_args(argv)
    project = args.project.resolve()
    base = (args.base or smoke_base(project, sys.executable)).resolve()
    with tempfile.TemporaryDirectory(
        prefix="probes-", dir=project / "build" if (project / "build").exists() else None
    ) as tmp:
        ctx = Ctx(project=project, base=base, scratch=Path(tmp))
        counts: dict[str, int] = {}
        for name, section, fn in PROBES:
            if args.only and not any(o in name for o in args.only):
                continue
            started = time.monotonic()
            try:
                verdict = fn(ctx)
            except Exception as exc:  # the probe itself broke: say so, go on
                verdict = Verdict("probe-error", f"{type(exc).__name__}: {exc}")
            counts[verdict.kind] = counts.get(verdict.kind, 0) + 1
            print(
                f"{verdict.kind:10} {section:9} {name} ({time.monotonic() - started:.0f} s)\n"
                f"{'':21}{verdict.said}",
                flush=True,
            )
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 0 if set(counts) <= {"clean", "skipped"} else 1


if __name__ == "__main__":
    sys.exit(main())
