"""``annotate``: one named range visible in torch.profiler traces and in Nsight Systems.

Enters ``torch.profiler.record_function`` only while a torch profiler is recording (an
idle ``record_function`` still costs ~6 µs), and pushes an NVTX range only when an NVTX
tool such as Nsight Systems is attached. With neither, a range costs two dictionary
look-ups. torch is never imported from here: if the program has not imported it, no
torch profiler can be running.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

DOMAIN = "stepscope"

_NvtxPush = Callable[[str, "str | None"], None]
_NvtxPop = Callable[[], None]
_Token = tuple[Any, bool]  # (entered record_function or None, NVTX range pushed)
_IDLE: _Token = (None, False)

_nvtx: tuple[_NvtxPush, _NvtxPop] | None = None
_ap: Any = None  # torch.autograd.profiler, once the program has imported torch
_nvtx_resolved = False
_package_checked = False
_package_present = False


class annotate:  # lower case: it stands beside torch's record_function
    """``with annotate("data"):`` or ``@annotate("forward")``: a named range.

    ``color`` (a name such as ``"green"`` or 0xRRGGBB) is used by Nsight Systems.
    The same instance may be entered again while entered (recursion, several threads).
    """

    __slots__ = ("_tokens", "color", "name")

    def __init__(self, name: str, color: str | int | None = None) -> None:
        self.name = name
        self.color = color
        self._tokens: list[_Token] = []

    def __enter__(self) -> annotate:
        ap = _ap
        # The idle path, inlined: it is what every call pays when nobody is profiling.
        if ap is not None and not ap._is_profiler_enabled and _nvtx is None and _nvtx_resolved:
            self._tokens.append(_IDLE)
        else:
            self._tokens.append(_enter(self.name, self.color))
        return self

    def __exit__(self, *exc: object) -> None:
        token = self._tokens.pop()
        if token is not _IDLE:
            _exit(token)

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        name, color = self.name, self.color

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            ap = _ap
            if ap is not None and not ap._is_profiler_enabled and _nvtx is None and _nvtx_resolved:
                return fn(*args, **kwargs)
            token = _enter(name, color)
            try:
                return fn(*args, **kwargs)
            finally:
                _exit(token)

        return wrapper


def _enter(name: str, color: str | int | None) -> _Token:
    if not _nvtx_resolved:
        _resolve_nvtx()
    recording = _torch_profiler_recording()
    if not recording and _nvtx is None:
        return _IDLE
    rf: Any = None
    if recording:
        import torch.profiler

        rf = torch.profiler.record_function(name)
        rf.__enter__()
    if _nvtx is not None:
        _nvtx[0](name, None if color is None else str(color))
        return (rf, True)
    return (rf, False)


def _exit(token: _Token) -> None:
    if token is _IDLE:
        return
    rf, pushed = token
    if pushed and _nvtx is not None:
        _nvtx[1]()
    if rf is not None:
        rf.__exit__(None, None, None)


def _torch_profiler_recording() -> bool:
    global _ap
    if _ap is None:
        ap = sys.modules.get("torch.autograd.profiler")
        # torch keeps this flag precisely for cheap "is a profiler on?" checks from Python.
        if ap is None or not hasattr(ap, "_is_profiler_enabled"):
            return False
        _ap = ap
    return bool(_ap._is_profiler_enabled)


def _resolve_nvtx() -> None:
    """Pick the NVTX backend: the ``nvtx`` package, else torch.cuda.nvtx, else none.

    Decided once the answer cannot change: the package is there, or torch is imported.
    """
    global _nvtx, _nvtx_resolved, _package_checked
    if not _package_checked:
        _package_checked = True
        _nvtx = _nvtx_package()
        if _nvtx is not None or _package_present:
            _nvtx_resolved = True
            return
    if "torch" in sys.modules:
        _nvtx = _torch_nvtx()
        _nvtx_resolved = True


def _nvtx_package() -> tuple[_NvtxPush, _NvtxPop] | None:
    global _package_present
    try:
        import nvtx
    except ImportError:
        return None
    _package_present = True
    domain = nvtx.get_domain(DOMAIN)
    # Without an attached tool (no Nsight Systems) nvtx hands back a do-nothing domain.
    if type(domain).__name__ == "DummyDomain":
        return None
    attributes: dict[tuple[str, str | None], Any] = {}

    def push(name: str, color: str | None) -> None:
        key = (name, color)
        attr = attributes.get(key)
        if attr is None:
            attr = attributes[key] = domain.get_event_attributes(message=name, color=color)
        domain.push_range(attr)

    return push, domain.pop_range


def _torch_nvtx() -> tuple[_NvtxPush, _NvtxPop] | None:
    torch = sys.modules.get("torch")
    # CPU builds of torch raise from every torch.cuda.nvtx call: use it only on CUDA builds.
    if torch is None or not hasattr(torch._C, "_nvtx"):
        return None
    cuda_nvtx = torch.cuda.nvtx

    def push(name: str, color: str | None) -> None:
        cuda_nvtx.range_push(name)

    def pop() -> None:
        cuda_nvtx.range_pop()

    return push, pop


def reset_nvtx_backend() -> None:
    """Forget the chosen NVTX backend (tests; or after attaching a tool late)."""
    global _nvtx, _nvtx_resolved, _package_checked, _package_present
    _nvtx, _nvtx_resolved, _package_checked, _package_present = None, False, False, False
