"""papermill, imported without the optional modules it loads and no run uses.

Importing papermill took 1.9-3.5 s of the seconds before the first notebook on a quiet 2-core CPU
(6-10 s under load), most of it in modules its dependencies load only if present: jsonschema's
IRI format checker (`rfc3987_syntax` builds a grammar on import; nbformat imports jsonschema) and
papermill's `gs://` and `hdfs://` handlers (`gcsfs`, `pyarrow`). Hidden while papermill loads,
each is skipped as if not installed (1.2-1.8 s in all under load); a run folder is a local path
and nbformat validates no IRI. They are importable again afterwards (a table task uses pyarrow).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

UNUSED = ("rfc3987_syntax", "gcsfs", "pyarrow")


@contextlib.contextmanager
def hidden(names: tuple[str, ...] = UNUSED) -> Iterator[None]:
    """Each of `names` not loaded yet fails to import inside the block, and imports after it."""
    held = [name for name in names if name not in sys.modules]
    for name in held:
        sys.modules[name] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        yield
    finally:
        for name in held:
            if sys.modules.get(name, "") is None:
                del sys.modules[name]


with hidden():
    import papermill
    from papermill import engines

__all__ = ["engines", "papermill"]
