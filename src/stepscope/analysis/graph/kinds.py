"""Codes shared by the graph modules: event families, edge kinds, path categories."""

from __future__ import annotations

from stepscope.classify import names

# Graph.fam: which model table an event row comes from
HOST, RUNTIME, DEVICE = 0, 1, 2
# A path event's kind, as the JSON names it: the host and runtime families, then the device
# kinds in model.trace's order (DEV_KERNEL, DEV_MEMCPY, DEV_MEMSET) from index DEVICE on
EVENT_KINDS = ("cpu_op", "runtime", "kernel", "memcpy", "memset")

# Edge kinds. Chain edges join consecutive endpoints of one host thread or device stream;
# cross edges join chains.
OPERATOR = 0  # inside a host range / device op, or between nested host ranges (timed)
DEPENDENCY = 1  # end of a top-level host range -> start of the next one on its thread
KERNEL_KERNEL = 2  # previous device op's end -> next op's start, same stream (timed gap)
ORDER = 3  # same, when the gap is explained by the launch (weight 0: stream order only)
LAUNCH = 4  # runtime call start -> device op start
SYNC = 5  # device op end -> end of the host call that waited for it
WAIT = 6  # device op end -> start of a device op on another stream (cudaStreamWaitEvent)
# A run of ranks (analysis/graph/ranks.py): a collective matched across ranks is one joint
# event; every member's start arrives at it, its end releases every member's end.
ARRIVE = 7  # a member's start -> the joint event's start (weight 0)
RELEASE = 8  # the joint event's end -> a member's end (its time after the transfer)
ISSUE = 9  # a host collective op's start -> its work on a backend thread (gloo: hostcomm.py)
EDGE_KINDS = ("operator", "dependency", "kernel_kernel", "order", "launch", "sync", "wait",
              "arrive", "release", "issue")

# Categories of critical-path time (the JSON's bound_by_pct keys, in order)
CATEGORIES = ("cpu", "gpu_compute", "launch_overhead", "kernel_to_kernel", "sync",
              "communication", "data_loading")
CPU, GPU_COMPUTE, LAUNCH_OVERHEAD, KERNEL_TO_KERNEL, SYNC_CAT, COMMUNICATION, DATA_LOADING = (
    range(7))
NO_CATEGORY = -1  # zero-weight dependency edges

# HTA 0.5.0's list of calls whose end edge has zero weight (the wait is the device's time)
HTA_BLOCKING = frozenset({"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery",
                          "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpyAsync"})
# HTA 0.5.0's launch calls (its launch-delay rule needs one); narrower than
# names.LAUNCH_CALLS | names.COPY_CALLS on purpose, to match HTA's graph
HTA_LAUNCH = frozenset({"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                        "cudaMemcpyAsync", "cudaMemsetAsync", "hipLaunchKernel",
                        "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync",
                        "hipMemcpyWithStream"})
# Calls that wait for the device (names.SYNC_CALLS) plus the asynchronous copies, which
# block when they copy to or from pageable memory (decided per call from its timing)
_WAITING = names.SYNC_CALLS | HTA_BLOCKING | {"hipMemcpyAsync", "cudaMemcpy2DAsync"}
_SYNC_ONLY = frozenset({"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
                        "cudaEventQuery", "cudaStreamWaitEvent", "cuStreamSynchronize",
                        "cuCtxSynchronize", "hipDeviceSynchronize", "hipStreamSynchronize",
                        "hipEventSynchronize"})


def is_hta_blocking(name: str) -> bool:
    return name in HTA_BLOCKING


def is_hta_launch(name: str) -> bool:
    return name in HTA_LAUNCH


def may_wait(name: str) -> bool:
    """Runtime calls that can block the host until device work finishes."""
    return name in _WAITING


def is_sync_call(name: str) -> bool:
    """Pure synchronisation calls (no work of their own): their host time is `sync`."""
    return name in _SYNC_ONLY
