"""Workers on one host serve their metrics on metrics_port + rank: the ports themselves, looked at.

Two workers on one port: the second cannot listen, or (with SO_REUSEPORT) Prometheus scrapes one of
them at random. The port a task listens on and the port the pre-flight check probes must both be
metrics_port + rank.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from helpers import free_port

from {{ cookiecutter.package_name }}.artifacts import StepError
from {{ cookiecutter.package_name }}.train import Params
from {{ cookiecutter.package_name }}.train.cluster import read_tf_config
from {{ cookiecutter.package_name }}.train.params import check_values
from {{ cookiecutter.package_name }}.train.watch import Watch

CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"]}


def _tf_config(kind: str, index: int) -> str:
    return json.dumps({"cluster": CLUSTER, "task": {"type": kind, "index": index}})


@pytest.mark.parametrize(("kind", "index", "offset"), [("chief", 0, 0), ("worker", 1, 2)])
def test_each_task_listens_on_the_port_plus_its_rank(
    tmp_path: Path, kind: str, index: int, offset: int
) -> None:
    port = 20000
    watch = Watch(tmp_path, Params(metrics_port=port), read_tf_config(_tf_config(kind, index)))
    try:
        assert watch.exporter.url == f"http://127.0.0.1:{port + offset}/metrics"
    finally:
        watch.close()


def _busy(port: int) -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", port))
    sock.listen()
    return sock


def test_the_check_probes_the_port_this_task_will_listen_on(monkeypatch) -> None:
    """Worker 1 (rank 2 beside a chief) is refused when metrics_port + 2 is taken, not when
    metrics_port itself is (the chief's, on another host perhaps)."""
    base = free_port()
    while base > 65000:  # base + 2 must be a port too
        base = free_port()
    monkeypatch.setenv("TF_CONFIG", _tf_config("worker", 1))
    params = Params(metrics_port=base, strategy="multi_worker", batch_size=63)
    try:
        own = _busy(base + 2)
    except OSError:
        pytest.skip(f"port {base + 2} is taken on this machine; the test needs it free")
    with own, pytest.raises(StepError, match=f"metrics_port={base + 2} is in use"):
        check_values(params)
    try:
        chiefs = _busy(base)
    except OSError:
        pytest.skip(f"port {base} was taken meanwhile")
    with chiefs:
        check_values(params)  # the chief's port is not this worker's
