"""Quiet by default, loud when asked: TensorFlow's start-up chatter stays out of notebooks and logs.

TensorFlow 2.21 prints a dozen C++ lines when it loads (absl's "before InitializeLog" notice,
oneDNN, "Could not find cuda drivers", CPU instructions) and more when devices start (`cuInit`
failed on a machine without a GPU), Python INFO lines (MirroredStrategy, "Assets written to"),
and library warnings (Keras' tf2onnx shim). None of it is something a user can act on; what they
must know is said once, in a sentence, by the step that knows (00_environment: no GPU driver; 05: a
skipped backend). Two parts, because C++ logging is fixed when TensorFlow loads:

- `setup()`, run when the package is imported: TF_CPP_MIN_LOG_LEVEL=3 for TensorFlow loaded
  later (a value the user set is kept), Python loggers at ERROR, the known warnings filtered,
  and the first `import tensorflow` of the process held like `import_tensorflow`'s (`HeldLoad`):
  TensorFlow 2.21 prints its load-time lines whatever TF_CPP_MIN_LOG_LEVEL says, so a plain
  script that imports the package printed them (unless the user set a level under 3 themselves).
- `kernel.py`, the notebooks' kernel: runs setup() and loads TensorFlow before the kernel starts,
  so the lines TensorFlow prints before any level applies go to the kernel's own log (the
  runner's notebooks/<name>.kernel.log, JupyterLab's terminal), not into a cell.

A user's own TF_CPP_MIN_LOG_LEVEL is kept, with one exception: on a machine without an NVIDIA
driver, TensorFlow's `failed call to cuInit` ERROR line (printed at levels 0-2 when devices start)
is dropped, since it only says that there is no GPU, which 00_environment says in words. Where a
driver is installed the line is kept: there a failing cuInit is a broken driver, worth seeing.
`import_tensorflow` starts the devices while it holds the descriptor, to catch that line.

`<PACKAGE>_VERBOSE=1` in the environment (or `run --verbose`) turns all of this off.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import importlib.abc
import importlib.util
import logging
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterator
from typing import Any, BinaryIO

from . import parts

PACKAGE = (__package__ or __name__).split(".")[0]
VERBOSE_ENV = f"{PACKAGE.upper()}_VERBOSE"
# TensorFlow C++ logging: 3 keeps FATAL only. 2 would still print `cuInit` failing (an ERROR) on
# every machine without a GPU, which 00_environment says in words.
QUIET_ENV = {"TF_CPP_MIN_LOG_LEVEL": "3"}
# TensorFlow's line when devices start on a machine without a GPU driver (levels 0-2 print it).
NO_DRIVER_LINE = re.compile(r"failed call to cuInit")
PART_LOGGERS = tuple(name for names in parts.collect("LOGGERS") for name in names)
QUIET_LOGGERS = ("tensorflow", "absl", "h5py", "tf2onnx", *PART_LOGGERS)
# (category, module regex): warnings from libraries that a user of this project cannot act on.
QUIET_WARNINGS = (
    (FutureWarning, r"keras\.src\.export\.tf2onnx_lib"),  # np.object probe in Keras' shim
    (DeprecationWarning, r"tf2onnx(\..*)?"),
    (UserWarning, r"keras\.src\.trainers\.epoch_iterator"),  # "ran out of data" on short probes
)


def verbose(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """True when the user asked for every log line: <PACKAGE>_VERBOSE set to 1/true/yes/on."""
    value = (os.environ if environ is None else environ).get(VERBOSE_ENV, "")
    return value.strip().lower() in {"1", "true", "yes", "on"}


def quiet_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a child process (a kernel, a fresh Python): quiet unless verbose.

    Values already in `environ` win, so a user's own TF_CPP_MIN_LOG_LEVEL is kept.
    """
    base = dict(os.environ if environ is None else environ)
    return base if verbose(base) else {**QUIET_ENV, **base}


def setup() -> None:
    """Quiet this process: environment defaults, Python loggers, known warnings. Idempotent."""
    if verbose():
        return
    asked = os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3").strip()
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    held = any(isinstance(finder, HeldLoad) for finder in sys.meta_path)
    if "tensorflow" not in sys.modules and not held and asked not in {"0", "1", "2"}:
        sys.meta_path.insert(0, HeldLoad())
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    for category, module in QUIET_WARNINGS:
        warnings.filterwarnings("ignore", category=category, module=module)
    _quiet_absl()


def import_tensorflow() -> None:
    """Load TensorFlow with its load-time lines (printed before any log level applies) dropped.

    They are written to file descriptor 2 by C++, so only redirecting the descriptor stops them.
    If loading fails they are printed after all, above the error, since they may say why. The
    devices are listed too, still redirected: what that prints is passed on, less the cuInit
    line of a machine without a driver (see the module's docstring).
    """
    if "tensorflow" in sys.modules or verbose() or importlib.util.find_spec("tensorflow") is None:
        return  # loaded already, loud on purpose, or absent: a command that needs it says so
    setup()
    with _caught(interrupted=False) as caught:  # a Ctrl-C needs no load-time lines
        import tensorflow

        loaded = os.lseek(caught.fileno(), 0, os.SEEK_CUR)
        tensorflow.config.list_physical_devices()  # starts the devices: cuInit runs here
        caught.seek(loaded)
        started = caught.read().decode("utf-8", errors="replace")
    sys.stderr.write(device_lines(started, driver=has_gpu_driver()))
    setup()  # absl's Python logger exists now


class HeldLoad(importlib.abc.MetaPathFinder):
    """Runs the first `import tensorflow` of the process with file descriptor 2 held: the lines
    TensorFlow's C++ prints while it loads are dropped, or printed above the error if loading
    fails. It finds nothing itself (the usual finders do, asked while it steps aside) and leaves
    sys.meta_path when TensorFlow loads; a mere probe (importlib.util.find_spec) leaves it armed."""

    def __init__(self) -> None:
        self.asking = False

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "tensorflow" or self.asking:
            return None
        self.asking = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.asking = False
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            load = spec.loader.exec_module

            def held(module: Any) -> None:
                if self in sys.meta_path:
                    sys.meta_path.remove(self)
                _held(lambda: load(module))

            spec.loader.exec_module = held  # type: ignore[method-assign]
        return spec


def _held(load: Any) -> None:
    """`load()` with descriptor 2 going to a file, passed on only if `load` raises."""
    with _caught():
        load()


@contextlib.contextmanager
def _caught(interrupted: bool = True) -> Iterator[BinaryIO]:
    """File descriptor 2 (where C++ writes) goes to a temporary file inside the block; what it
    caught is written to stderr, above the error, if the block raises (a Ctrl-C's only with
    `interrupted`)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield caught
        except BaseException as error:
            os.dup2(saved, 2)
            caught.seek(0)
            if interrupted or not isinstance(error, KeyboardInterrupt):
                sys.stderr.write(caught.read().decode("utf-8", errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def device_lines(text: str, *, driver: bool) -> str:
    """What TensorFlow printed when its devices started, to pass on: all of it where a GPU
    driver is installed, else all but the cuInit line (it only says there is no GPU)."""
    if driver:
        return text
    return "".join(line for line in text.splitlines(True) if not NO_DRIVER_LINE.search(line))


def has_gpu_driver() -> bool:
    """True where an NVIDIA driver is installed: its kernel module, or a loadable libcuda."""
    return os.path.exists("/proc/driver/nvidia/version") or bool(ctypes.util.find_library("cuda"))


def _quiet_absl() -> None:
    """absl's Python logger, which TensorFlow's INFO lines go through, at ERROR (if loaded)."""
    try:
        from absl import logging as absl_logging
    except ImportError:  # absl comes with TensorFlow; without it there is nothing to quiet
        return
    absl_logging.set_verbosity(absl_logging.ERROR)
