"""The SQL tables: their columns, types and meaning (``stepscope sql PATH --schema``, docs/sql.md).

One :class:`TableDef` per table. Each table is a DuckDB view over an Arrow table built by
:mod:`stepscope.query.tables`; a column's ``expr`` says how the view computes it from the
Arrow columns (the µs columns are computed on the fly, so the Arrow data stays the
model's own arrays). The names here are the contract: they do not change between versions
(a new column may be added, never renamed).

Times: ``*_ns`` columns are int64 nanoseconds as the profiler wrote them (absolute);
``ts_us``/``end_us`` are microseconds since the trace's first event (``origin_ns``, per
rank in a run), ``dur_us`` the duration in microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

TRACE, NSYS, TENSORRT = "trace", "nsys", "tensorrt"  # which inputs have the table


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # DuckDB type
    doc: str
    expr: str = ""  # the view's expression over the Arrow columns; "" = the column itself


@dataclass(frozen=True)
class TableDef:
    name: str
    doc: str
    columns: tuple[Column, ...]
    inputs: frozenset[str] = frozenset({TRACE, NSYS})


def _c(name: str, type_: str, doc: str, expr: str = "") -> Column:
    return Column(name, type_, doc, expr)


def _timed(prefix: str = "") -> tuple[Column, ...]:
    """ts/dur/end in ns (absolute) and µs (since the trace's first event)."""
    return (
        _c("ts_ns", "BIGINT", f"{prefix}start, ns as the profiler wrote it"),
        _c("dur_ns", "BIGINT", "duration, ns"),
        _c("end_ns", "BIGINT", "end, ns (ts_ns + dur_ns)", "ts_ns + dur_ns"),
        _c("ts_us", "DOUBLE", "start, µs since the trace's first event",
           "(ts_ns - origin_ns) / 1000.0"),
        _c("dur_us", "DOUBLE", "duration, µs", "dur_ns / 1000.0"),
        _c("end_us", "DOUBLE", "end, µs since the trace's first event",
           "(ts_ns + dur_ns - origin_ns) / 1000.0"),
    )


_DEVICE_OP = (
    _c("device", "INTEGER", "device index"),
    _c("stream", "BIGINT", "stream id"),
    _c("correlation", "BIGINT", "correlation id: the runtime call that launched it"),
    _c("external_id", "BIGINT", "external id (Kineto: the launching operator's)"),
)

RANK = _c("rank", "INTEGER", "the rank (runs of many ranks only: a folder or several files)")

TABLES: tuple[TableDef, ...] = (
    TableDef("host_ops", "CPU-side ranges: PyTorch operators, record_function/ProfilerStep "
             "annotations and Python frames", (
        _c("id", "BIGINT", "row id (links.op_id)"),
        _c("name", "VARCHAR", "operator or range name"),
        _c("kind", "VARCHAR", "operator | annotation | python"),
        *_timed(),
        _c("pid", "VARCHAR", "process id as written"),
        _c("tid", "VARCHAR", "thread id as written"),
        _c("external_id", "BIGINT", "external id (joins runtime.external_id)"),
        _c("input_dims", "VARCHAR", "JSON text of Input Dims (NULL when not recorded)"),
        _c("input_types", "VARCHAR", "JSON text of Input type (dtypes)"),
        _c("input_strides", "VARCHAR", "JSON text of Input Strides"),
        _c("concrete_inputs", "VARCHAR", "JSON text of Concrete Inputs"),
        _c("call_stack", "VARCHAR", "Python call stack, frames separated by ';'"),
    )),
    TableDef("runtime", "host calls into the device runtime or driver (cudaLaunchKernel, "
             "cudaMemcpyAsync, cudaStreamSynchronize, hip*, ...)", (
        _c("id", "BIGINT", "row id (links.runtime_id)"),
        _c("name", "VARCHAR", "API call name"),
        *_timed(),
        _c("pid", "VARCHAR", "process id as written"),
        _c("tid", "VARCHAR", "thread id as written"),
        _c("correlation", "BIGINT", "correlation id (joins the device op it launched)"),
        _c("external_id", "BIGINT", "external id (joins host_ops.external_id)"),
    )),
    TableDef("kernels", "GPU kernels", (
        _c("id", "BIGINT", "device op id (links.device_op_id)"),
        _c("name", "VARCHAR", "kernel name (demangled)"),
        *_timed(),
        *_DEVICE_OP,
        _c("grid_x", "INTEGER", "grid size x"), _c("grid_y", "INTEGER", "grid size y"),
        _c("grid_z", "INTEGER", "grid size z"), _c("block_x", "INTEGER", "block size x"),
        _c("block_y", "INTEGER", "block size y"), _c("block_z", "INTEGER", "block size z"),
        _c("registers", "INTEGER", "registers per thread"),
        _c("shared_mem", "BIGINT", "shared memory per block, bytes"),
        _c("blocks_per_sm", "FLOAT", "Kineto's blocks per SM (NaN when absent)"),
        _c("occupancy_pct", "FLOAT", "Kineto's est. achieved occupancy % (NaN when absent)"),
    )),
    TableDef("memcpy", "GPU memory copies", (
        _c("id", "BIGINT", "device op id (links.device_op_id)"),
        _c("name", "VARCHAR", "copy name as written"),
        *_timed(),
        *_DEVICE_OP,
        _c("bytes", "BIGINT", "bytes copied"),
        _c("copy_kind", "VARCHAR", "HtoD | DtoH | DtoD | HtoH | PtoP | ... (NULL when unknown)"),
        _c("src_memory", "VARCHAR", "pageable | pinned | device | array | managed (NULL unknown)"),
        _c("dst_memory", "VARCHAR", "pageable | pinned | device | array | managed (NULL unknown)"),
        _c("gb_per_s", "DOUBLE", "bytes / duration (GB/s)",
           "CASE WHEN dur_ns > 0 THEN bytes / dur_ns END"),
    )),
    TableDef("memset", "GPU memory sets", (
        _c("id", "BIGINT", "device op id (links.device_op_id)"),
        _c("name", "VARCHAR", "memset name as written"),
        *_timed(),
        *_DEVICE_OP,
        _c("bytes", "BIGINT", "bytes set"),
    )),
    TableDef("links", "each device op (kernel, memcpy, memset) with the runtime call that "
             "launched it and the host operator that made the call (correlation and "
             "external ids, as analysis/events/links.py joins them)", (
        _c("device_op_id", "BIGINT", "kernels.id / memcpy.id / memset.id"),
        _c("device_kind", "VARCHAR", "kernel | memcpy | memset"),
        _c("device_op", "VARCHAR", "the device op's name"),
        _c("runtime_id", "BIGINT", "runtime.id of the launch (NULL: not found)"),
        _c("runtime", "VARCHAR", "the launching runtime call's name"),
        _c("op_id", "BIGINT", "host_ops.id of the launching operator (NULL: not found)"),
        _c("op", "VARCHAR", "the launching operator's name"),
    )),
    TableDef("steps", "training steps (ProfilerStep#N) as the report delimits them: the "
             "host range widened to the device work it launched; one whole-trace step "
             "when the trace has none", (
        _c("step", "VARCHAR", "N of ProfilerStep#N ('0' without steps)"),
        _c("start_ns", "BIGINT", "step start, ns (device-aware)"),
        _c("end_ns", "BIGINT", "step end, ns (device-aware)"),
        _c("dur_ns", "BIGINT", "step duration, ns", "end_ns - start_ns"),
        _c("dur_us", "DOUBLE", "step duration, µs", "(end_ns - start_ns) / 1000.0"),
        _c("host_start_ns", "BIGINT", "the ProfilerStep range's start, ns"),
        _c("host_end_ns", "BIGINT", "the ProfilerStep range's end, ns"),
        _c("device_ops", "BIGINT", "device ops launched inside the step"),
        _c("warmup", "BOOLEAN", "left out of steady state as warm-up (docs/metrics.md)"),
    )),
    TableDef("memory", "allocator records (profile_memory=True): one allocation (+bytes) or "
             "free (-bytes) each", (
        _c("ts_ns", "BIGINT", "time, ns as written"),
        _c("ts_us", "DOUBLE", "time, µs since the trace's first event",
           "(ts_ns - origin_ns) / 1000.0"),
        _c("device_type", "INTEGER", "0 CPU, 1 CUDA (others vendor specific)"),
        _c("device_id", "INTEGER", "device index"),
        _c("bytes", "BIGINT", "allocated (+) or freed (-) bytes"),
        _c("addr", "BIGINT", "address"),
        _c("total_allocated", "BIGINT", "allocated bytes after the event"),
        _c("total_reserved", "BIGINT", "reserved bytes after the event"),
        _c("tid", "VARCHAR", "thread id as written"),
    )),
    TableDef("modules", "the nn.Module tree (with_modules / with_stack), one row per module "
             "path, as the report's Modules view (docs/metrics.md)", (
        _c("id", "BIGINT", "row id"),
        _c("parent_id", "BIGINT", "parent's id (NULL for a root)"),
        _c("name", "VARCHAR", "module name (Linear_0)"),
        _c("path", "VARCHAR", "module path (Model_0/Block_1/Linear_0)"),
        _c("depth", "INTEGER", "nesting depth (0 = root)"),
        _c("calls", "BIGINT", "calls"),
        _c("host_total_us", "DOUBLE", "host time inside the module, µs"),
        _c("host_self_us", "DOUBLE", "host time not in child modules, µs"),
        _c("device_total_us", "DOUBLE", "device time launched inside it, µs"),
        _c("device_self_us", "DOUBLE", "device time not launched in child modules, µs"),
        _c("max_call_us", "DOUBLE", "longest call, µs"),
    )),
    TableDef("devices", "the accelerators the trace describes", (
        _c("id", "INTEGER", "device index"),
        _c("name", "VARCHAR", "device name"),
        _c("total_memory", "BIGINT", "bytes"),
        _c("compute_capability", "VARCHAR", "major.minor"),
        _c("num_sms", "INTEGER", "streaming multiprocessors / compute units"),
        _c("max_threads_per_sm", "INTEGER", "threads per SM"),
        _c("warp_size", "INTEGER", "warp / wavefront size"),
        _c("clock_hz", "BIGINT", "SM clock (0: unknown)"),
        _c("memory_bandwidth", "BIGINT", "bytes/s (0: unknown)"),
    )),
    TableDef("collectives", "collective calls with their communication arguments (host "
             "ranges and device kernels carrying them)", (
        *_timed(),
        _c("on_device", "BOOLEAN", "a device kernel (else a host range)"),
        _c("name", "VARCHAR", "the event's own name"),
        _c("collective", "VARCHAR", "allreduce, allgather, ... (NULL unknown)"),
        _c("in_nelems", "BIGINT", "input elements"),
        _c("out_nelems", "BIGINT", "output elements"),
        _c("dtype", "VARCHAR", "dtype as written"),
        _c("group_size", "INTEGER", "ranks in the group"),
        _c("process_group", "VARCHAR", "process group name"),
        _c("seq", "BIGINT", "the group's call counter (Seq; NULL when not written)"),
    )),
    TableDef("syncs", "cuda_sync events: the device side of stream/event/context "
             "synchronisation", (
        _c("name", "VARCHAR", "sync kind as written"),
        *_timed(),
        _c("device", "INTEGER", "device index"),
        _c("stream", "BIGINT", "stream id"),
        _c("correlation", "BIGINT", "correlation id of the runtime call"),
    )),
    TableDef("findings", "the advisor's findings, as `stepscope report` gives them for one "
             "trace or engine (docs/advice.md); in a run of ranks, each rank's own", (
        _c("id", "VARCHAR", "rule id"),
        _c("title", "VARCHAR", "one line"),
        _c("severity", "VARCHAR", "high | medium | low"),
        _c("saving_us", "DOUBLE", "estimated saving per step, µs (upper bound)"),
        _c("saving_pct", "DOUBLE", "the same in % of the step"),
        _c("estimate", "VARCHAR", "how the saving was estimated"),
        _c("fix", "VARCHAR", "the change to make"),
        _c("evidence", "VARCHAR[]", "evidence lines"),
    ), frozenset({TRACE, NSYS, TENSORRT})),
    TableDef("nvtx", "NVTX ranges (Nsight Systems exports)", (
        _c("name", "VARCHAR", "the range's message"),
        *_timed(),
        _c("pid", "VARCHAR", "process id"),
        _c("tid", "VARCHAR", "thread id"),
        _c("domain", "VARCHAR", "NVTX domain (NULL: the default domain)"),
        _c("style", "VARCHAR", "pushpop | startend"),
        _c("payload", "DOUBLE", "numeric payload (NULL when none)"),
    ), frozenset({NSYS})),
    TableDef("layers", "TensorRT engine layers (trtexec --dumpProfile / --exportProfile and "
             "--exportLayerInfo), in execution order", (
        _c("idx", "INTEGER", "execution order"),
        _c("name", "VARCHAR", "layer name"),
        _c("type", "VARCHAR", "layer type ('' when the layer info is names-only)"),
        _c("average_us", "DOUBLE", "time per inference, µs"),
        _c("median_us", "DOUBLE", "median per inference, µs (NULL before TRT 8.4)"),
        _c("total_ms", "DOUBLE", "summed over the profiled iterations, ms"),
        _c("share_pct", "DOUBLE", "% of the summed per-layer time"),
        _c("calls", "BIGINT", "profiled iterations"),
        _c("precision", "VARCHAR", "compute precision (docs/tensorrt.md)"),
        _c("tactic", "VARCHAR", "tactic name"),
        _c("reformat", "BOOLEAN", "a reformat (copy/convert) layer"),
    ), frozenset({TENSORRT})),
)

BY_NAME = {t.name: t for t in TABLES}


def tables_for(input_kind: str) -> tuple[TableDef, ...]:
    """The tables an input of ``input_kind`` (TRACE, NSYS or TENSORRT) has."""
    return tuple(t for t in TABLES if input_kind in t.inputs)
