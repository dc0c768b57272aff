"""`make lab` works: the project's JupyterLab serves the notebooks, runs a kernel, wants a token.

One real server per test session, on a free port of 127.0.0.1, with its own config and runtime
folders so a user's Jupyter settings cannot change the outcome; it is stopped in the finalizer.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from jupyter_client import BlockingKernelClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "00_environment.ipynb"
START_TIMEOUT_S = 90
KERNEL_TIMEOUT_S = 60
STOP_TIMEOUT_S = 15

pytestmark = pytest.mark.timeout(300)


@dataclass(frozen=True)
class Lab:
    url: str
    token: str
    runtime: Path
    log: Path


def test_lab_lists_the_notebooks(lab: Lab) -> None:
    """The contents API serves notebooks/, with the environment notebook in it, as a notebook."""
    listing = _get(lab, "/api/contents/notebooks")
    entries = {entry["name"]: entry["type"] for entry in listing["content"]}
    assert entries.get(NOTEBOOK) == "notebook", f"{NOTEBOOK} not served; got {sorted(entries)}"

    model = _get(lab, f"/api/contents/notebooks/{NOTEBOOK}")
    tags = [cell["metadata"].get("tags", []) for cell in model["content"]["cells"]]
    assert sum("parameters" in cell_tags for cell_tags in tags) == 1


def test_lab_starts_a_kernel_of_this_venv_and_stops_it(lab: Lab) -> None:
    """A python3 kernel starts, is listed, runs code with this venv's Python, and goes on DELETE."""
    kernel_id = _request(lab, "POST", "/api/kernels", {"name": "python3"})["id"]
    try:
        assert kernel_id in {k["id"] for k in _get(lab, "/api/kernels")}
        prefix = _run_in_kernel(lab.runtime / f"kernel-{kernel_id}.json", "print(sys.prefix)")
        assert prefix.strip() == sys.prefix
        assert _kernel_state(lab, kernel_id, until="idle") == "idle"
    finally:
        _request(lab, "DELETE", f"/api/kernels/{kernel_id}")
    assert kernel_id not in {k["id"] for k in _get(lab, "/api/kernels")}


@pytest.mark.parametrize("path", ["/api/contents/notebooks", "/api/kernels"])
def test_lab_refuses_requests_without_the_token(lab: Lab, path: str) -> None:
    """Without the token the API answers 401/403: the lab is not open to anyone on the machine."""
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(lab.url + path, timeout=10)
    assert refused.value.code in (401, 403)


def test_lab_shows_no_news_or_update_toasts(lab: Lab) -> None:
    """JupyterLab's announcements toast covered the notebooks' figures: `make lab` turns news
    fetching and update checks off, and the page the browser gets says news is disabled."""
    request = urllib.request.Request(f"{lab.url}/lab?token={lab.token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        page = response.read().decode()
    start = page.index('id="jupyter-config-data"')
    config = json.loads(page[page.index(">", start) + 1 : page.index("</script>", start)])
    assert config["news"] == {"disabled": True}
    # The flags alone left the consent toast ("Would you like to get notified…") over the figures,
    # seen in Chromium: the plugin that shows it is off.
    assert set(lab_off()) <= set(config["disabledExtensions"]), config["disabledExtensions"]


def test_make_lab_itself_disables_the_plugin_and_passes_the_flags() -> None:
    """The lab fixture starts what LAB_QUIET and LAB_OFF say; `make lab` must use both too, or
    the news toast comes back over the figures while the test above still passes."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("lab:"))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line)
    said = "\n".join(recipe)
    assert "-m jupyter labextension disable --level=sys_prefix $(LAB_OFF)" in said, said
    assert "-m jupyterlab " in said and "$(LAB_QUIET)" in said, said


def lab_quiet() -> list[str]:
    """The flags the Makefile's lab target adds (LAB_QUIET), so the test starts what make does."""
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        if line.startswith("LAB_QUIET :="):
            return line.split(":=", 1)[1].split()
    pytest.fail("the Makefile has no LAB_QUIET line: make lab would show JupyterLab's toasts")


def lab_off() -> list[str]:
    """The JupyterLab plugins the Makefile's lab target disables in the venv (LAB_OFF)."""
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        if line.startswith("LAB_OFF :="):
            return line.split(":=", 1)[1].split()
    pytest.fail("the Makefile has no LAB_OFF line: make lab would ask about Jupyter news")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """The project's JupyterLab, as `make lab` starts it, on a free port with a random token."""
    if not (ROOT / "notebooks" / NOTEBOOK).is_file():
        pytest.fail(f"notebooks/{NOTEBOOK} is missing: the lab tests open it.")
    home = tmp_path_factory.mktemp("jupyter")
    token = secrets.token_hex(16)
    port = _free_port()
    disable = [sys.executable, "-m", "jupyter", "labextension", "disable", "--level=sys_prefix"]
    subprocess.run([*disable, *lab_off()], check=True, capture_output=True, timeout=120)
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={ROOT}",
        *lab_quiet(),
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_")}
    env.update(
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
    )
    log = home / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    lab = Lab(url=f"http://127.0.0.1:{port}", token=token, runtime=home / "runtime", log=log)
    try:
        _wait_for_server(lab, server)
        yield lab
    finally:
        server.terminate()
        try:
            server.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=STOP_TIMEOUT_S)


def _wait_for_server(lab: Lab, server: subprocess.Popen[bytes]) -> None:
    """Poll /api/status until it answers; fail with the server's log if it exits or never does."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"JupyterLab exited with {server.returncode}:\n{_tail(lab.log)}")
        try:
            _get(lab, "/api/status")
            return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.5)
    pytest.fail(f"JupyterLab did not answer within {START_TIMEOUT_S} s:\n{_tail(lab.log)}")


def _run_in_kernel(connection_file: Path, code: str) -> str:
    """Run `code` in the kernel the server started, as a notebook would; its printed output."""
    client = BlockingKernelClient(connection_file=str(connection_file))
    client.load_connection_file()
    client.start_channels()
    printed: list[str] = []

    def keep_stdout(message: dict) -> None:
        if message["msg_type"] == "stream" and message["content"]["name"] == "stdout":
            printed.append(message["content"]["text"])

    try:
        client.wait_for_ready(timeout=KERNEL_TIMEOUT_S)
        reply = client.execute_interactive(
            f"import sys\n{code}", timeout=KERNEL_TIMEOUT_S, output_hook=keep_stdout
        )
    finally:
        client.stop_channels()
    assert reply["content"]["status"] == "ok", reply["content"]
    return "".join(printed)


def _kernel_state(lab: Lab, kernel_id: str, until: str) -> str:
    """The kernel's execution state as the server reports it, once it is `until` or time is up."""
    deadline = time.monotonic() + KERNEL_TIMEOUT_S
    state = _get(lab, f"/api/kernels/{kernel_id}")["execution_state"]
    while state != until and time.monotonic() < deadline:
        time.sleep(0.2)
        state = _get(lab, f"/api/kernels/{kernel_id}")["execution_state"]
    return state


def _get(lab: Lab, path: str) -> dict:
    return _request(lab, "GET", path)


def _request(lab: Lab, method: str, path: str, body: dict | None = None) -> dict:
    """One authenticated API call; the JSON answer, or {} for an empty one (DELETE)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(lab.url + path, data=data, method=method)
    request.add_header("Authorization", f"token {lab.token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        payload = response.read()
    return json.loads(payload) if payload else {}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _tail(log: Path, lines: int = 40) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
