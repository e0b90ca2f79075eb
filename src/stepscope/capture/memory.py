"""Write ``profile.export_memory_timeline``'s raw categorised timeline beside a trace."""

from __future__ import annotations

import os
import tempfile
import warnings
from typing import Any

from stepscope.capture.export import _copy
from stepscope.errors import UsageError
from stepscope.formats.memory.timeline import timeline_path

__all__ = ["export_memory_timeline", "timeline_path"]

def export_memory_timeline(prof: Any, path: str, *, device: str | None = None,
                           storage_options: dict[str, Any] | None = None) -> str:
    """Raw memory timeline (parameters, optimizer state, inputs, activations, gradients,
    temporaries, autograd detail over time) of ``prof``'s last cycle, written to ``path``.
    Needs the cycle recorded with ``profile_memory``, ``record_shapes`` and ``with_stack``."""
    with tempfile.TemporaryDirectory(prefix="stepscope-memory-") as tmp:
        raw = os.path.join(tmp, "timeline.raw.json.gz")
        try:
            with warnings.catch_warnings():  # torch marks it deprecated; we asked for it
                warnings.simplefilter("ignore", FutureWarning)
                prof.export_memory_timeline(raw, device=device)
        except (AssertionError, RuntimeError) as exc:
            raise UsageError(f"export_memory_timeline: {exc or type(exc).__name__} (record "
                             "with profile_memory, record_shapes and with_stack)") from None
        _copy(raw, path, storage_options)
    return path
