"""The Prometheus endpoint of a training run: `metrics_port` > 0 switches it on.

Every series carries `run` (the run folder's name) and `task` ("chief/0" for a single process,
"worker/0", "worker/1", … in a multi-worker job), so one Prometheus and one dashboard follow
several runs and every worker. Each worker serves its own numbers (rate, step time, input wait,
steps); the chief alone serves the epoch-level ones (loss, validation, epoch, checkpoint age),
which are the same on every worker. Under multi-worker each process listens on metrics_port + its
rank (chief 0), so several workers on one host do not collide. The endpoint listens on 127.0.0.1
unless `metrics_host` says otherwise, and closes when training returns.
"""

from __future__ import annotations

import errno
import socket
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Info, start_http_server

from .gpu import GpuCollector, load_nvml, tensorflow_memory
from .profiler import ObserveError

LABELS = ("run", "task")
LOWEST_PORT = 1024


def check_port(port: Any, host: Any) -> None:
    """Refuse a port out of range, a bad host, or a port something already listens on."""
    if (
        isinstance(port, bool)
        or not isinstance(port, int)
        or not (port == 0 or LOWEST_PORT <= port <= 65535)
    ):
        raise ObserveError(
            f"metrics_port={port!r} is not allowed: use 0 (no metrics endpoint) or a port "
            f"{LOWEST_PORT}-65535, e.g. 9464."
        )
    if not isinstance(host, str) or not host.strip():
        raise ObserveError(
            f"metrics_host={host!r} is not allowed: use an address to listen on, e.g. 127.0.0.1 "
            "(this machine only) or 0.0.0.0 (every interface)."
        )
    if port:
        probe(port, host)


def probe(port: int, host: str) -> None:
    """Bind and release host:port, as the endpoint will, to refuse it before training starts."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise ObserveError(
                f"metrics_port={port} is in use on {host}: stop what listens there "
                f"(`ss -ltnp 'sport = :{port}'` shows it) or choose another port."
            ) from None
        raise ObserveError(
            f"metrics_host={host!r} with metrics_port={port} cannot be listened on "
            f"({error.strerror or error}): use an address of this machine, e.g. 127.0.0.1."
        ) from None


class Exporter:
    """The gauges of one training process, served on host:port until close()."""

    def __init__(self, port: int, host: str, *, run: str, task: str, chief: bool) -> None:
        self.port, self.host, self.chief = port, host, chief
        self.registry = CollectorRegistry()
        self._labels = {"run": run, "task": task}
        self._server: Any = None
        self._checkpoint_time = time.time()
        gauge = self._gauge
        self.examples_per_second = gauge("train_examples_per_second", "Training examples/s")
        self.step_seconds = gauge("train_step_seconds", "Mean seconds per training step")
        self.input_wait = gauge("train_input_wait_ratio", "Share of step time waiting for data")
        self.last_step = gauge("train_last_step_timestamp_seconds", "Unix time of the last step")
        self.steps = Counter(
            "train_steps", "Training steps run", LABELS, registry=self.registry
        ).labels(**self._labels)
        self.info = Info("train", "What trains", LABELS, registry=self.registry)
        if chief:
            self.loss = gauge("train_loss", "Training loss, running mean of the epoch")
            self.accuracy = gauge("train_accuracy", "Training accuracy, running, this epoch")
            self.val_loss = gauge("train_val_loss", "Validation loss of the last epoch")
            self.val_accuracy = gauge("train_val_accuracy", "Validation accuracy, last epoch")
            self.epoch = gauge("train_epoch", "Epochs completed")
            self.epochs = gauge("train_epochs", "Epochs planned")
            since = gauge("train_seconds_since_checkpoint", "Seconds since the last checkpoint")
            since.set_function(lambda: time.time() - self._checkpoint_time)
        nvml = load_nvml()
        self.gpus = nvml is not None
        if nvml is not None:
            self.registry.register(GpuCollector(nvml, self._labels))
        allocator = tensorflow_memory(self._labels)
        if allocator is not None:
            self.registry.register(allocator)

    def _gauge(self, name: str, documentation: str) -> _Series:
        """A gauge with this process's run and task labels, in this exporter's registry."""
        return _Series(Gauge(name, documentation, LABELS, registry=self.registry), self._labels)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def start(self, info: dict[str, str], *, epochs: int, epoch: int) -> None:
        """Serve, with what trains and where it starts."""
        self.info.labels(**self._labels).info(info)
        if self.chief:
            self.epochs.set(epochs)
            self.epoch.set(epoch)
        try:
            self._server, _ = start_http_server(self.port, addr=self.host, registry=self.registry)
        except OSError as error:
            raise ObserveError(
                f"metrics_port={self.port} on {self.host} could not be listened on "
                f"({error.strerror or error}): choose another port."
            ) from None

    def report_steps(
        self, steps: int, seconds: float, waited: float, examples: float, running: tuple
    ) -> None:
        """After a call of the step function: its steps, seconds, seconds waiting for data and
        examples; `running` is the epoch's (loss, accuracy) so far."""
        if steps <= 0 or seconds <= 0:
            return
        self.steps.inc(steps)
        self.step_seconds.set(seconds / steps)
        self.input_wait.set(min(1.0, waited / seconds))
        self.examples_per_second.set(examples / seconds)
        self.last_step.set(time.time())
        if self.chief:
            self.loss.set(running[0])
            self.accuracy.set(running[1])

    def report_epoch(self, record: dict[str, Any]) -> None:
        """After an epoch's validation and checkpoint."""
        self._checkpoint_time = time.time()
        if self.chief:
            self.epoch.set(record["epoch"])
            self.loss.set(record["loss"])
            self.accuracy.set(record["accuracy"])
            self.val_loss.set(record["val_loss"])
            self.val_accuracy.set(record["val_accuracy"])

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class _Series:
    """One labelled gauge, absent from the scrape until its first value (not a made-up 0)."""

    def __init__(self, metric: Gauge, labels: dict[str, str]) -> None:
        self.metric, self.labels = metric, labels

    def set(self, value: float) -> None:
        self.metric.labels(**self.labels).set(value)

    def set_function(self, function: Any) -> None:
        self.metric.labels(**self.labels).set_function(function)


class NoExporter:
    """metrics_port=0: the same calls, doing nothing."""

    url = None
    gpus = False

    def start(self, *_: Any, **__: Any) -> None: ...

    def report_steps(self, *_: Any) -> None: ...

    def report_epoch(self, *_: Any) -> None: ...

    def close(self) -> None: ...
