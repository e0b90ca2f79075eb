"""Synthetic Nsight Systems SQLite exports for unit tests.

Only the tables that receive rows are created (nsys exports lazily). ``variant`` picks
the column and table spellings of an old export (2023.2, schema 3.1.x: EXPORT_META_DATA,
no greenContextId, TARGET_INFO_CUDA_NULL_STREAM) or a new one (2025.1, schema 3.17:
META_DATA_EXPORT, greenContextId, TARGET_INFO_CUDA_DEVICE, NVTX binaryData). Times in ns::

    b = NsysBuilder()
    b.launch("cudaLaunchKernel_v7000", 100, 10, kernel="sgemm", k_ts=200, k_dur=50)
    path = b.write(tmp_path / "r.sqlite")
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VM = 1 << 48
PID = 4242
TID = 4243


def gtid(pid: int = PID, tid: int = TID) -> int:
    return VM | (pid << 24) | tid


def gpid(pid: int = PID) -> int:
    return VM | (pid << 24)


KERNEL_COLS = {
    "old": ["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
            "demangledName", "shortName", "mangledName", "launchType", "cacheConfig",
            "registersPerThread", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ",
            "staticSharedMemory", "dynamicSharedMemory", "localMemoryPerThread",
            "localMemoryTotal", "gridId", "sharedMemoryExecuted", "graphNodeId",
            "sharedMemoryLimitConfig"],
}
KERNEL_COLS["new"] = [*KERNEL_COLS["old"][:4], "greenContextId", *KERNEL_COLS["old"][4:]]
MEMCPY_COLS = {
    "old": ["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
            "bytes", "copyKind", "deprecatedSrcId", "srcKind", "dstKind", "srcDeviceId",
            "srcContextId", "dstDeviceId", "dstContextId", "migrationCause", "graphNodeId",
            "virtualAddress"],
}
MEMCPY_COLS["new"] = [*MEMCPY_COLS["old"][:4], "greenContextId", *MEMCPY_COLS["old"][4:]]
MEMSET_COLS = {
    "old": ["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
            "value", "bytes", "graphNodeId", "memKind"],
}
MEMSET_COLS["new"] = [*MEMSET_COLS["old"][:4], "greenContextId", *MEMSET_COLS["old"][4:]]
SYNC_COLS = {
    "old": ["start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
            "syncType", "eventId"],
    "new": ["start", "end", "deviceId", "contextId", "greenContextId", "streamId",
            "correlationId", "globalPid", "deprecatedSyncType", "syncType", "eventId",
            "eventSyncId"],
}
RUNTIME_COLS = ["start", "end", "eventClass", "globalTid", "correlationId", "nameId",
                "returnValue", "callchainId"]
NVTX_COLS = {
    "old": ["start", "end", "eventType", "rangeId", "category", "color", "text", "globalTid",
            "endGlobalTid", "textId", "domainId", "uint64Value", "int64Value", "doubleValue",
            "uint32Value", "int32Value", "floatValue", "jsonTextId", "jsonText"],
}
NVTX_COLS["new"] = [*NVTX_COLS["old"], "binaryData"]
OSRT_COLS = ["start", "end", "eventClass", "globalTid", "nameId", "returnValue", "nestingLevel",
             "callchainId"]
GPU_COLS = ["vmId", "id", "name", "busLocation", "isDiscrete", "l2CacheSize", "totalMemory",
            "memoryBandwidth", "clockRate", "smCount", "pwGpuId", "uuid", "luid", "chipName",
            "cuDevice", "maxRegistersPerBlock", "maxShmemPerBlock", "maxShmemPerSm",
            "maxRegistersPerSm", "threadsPerWarp", "maxWarpsPerSm", "maxBlocksPerSm",
            "maxThreadsPerBlock", "computeMajor", "computeMinor"]


@dataclass
class NsysBuilder:
    variant: str = "new"  # "old" | "new"
    strings: dict[str, int] = field(default_factory=dict)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    _corr: int = 0

    def __post_init__(self) -> None:
        self.gpu()

    # ---- strings and rows --------------------------------------------------------
    def sid(self, s: str) -> int:
        if s not in self.strings:
            self.strings[s] = len(self.strings)
        return self.strings[s]

    def _add(self, table: str, **row: Any) -> dict[str, Any]:
        self.rows.setdefault(table, []).append(row)
        return row

    def next_corr(self) -> int:
        self._corr += 1
        return self._corr

    # ---- events ------------------------------------------------------------------
    def gpu(self, *, sm_count: int = 132, name: str = "NVIDIA H100", gpu_id: int = 0) -> None:
        self.rows["TARGET_INFO_GPU"] = [dict(
            vmId=VM, id=gpu_id, name=name, busLocation="0000:01:00.0", isDiscrete=1,
            l2CacheSize=50 << 20, totalMemory=80 << 30, memoryBandwidth=3_350_000_000_000,
            clockRate=1_980_000_000, smCount=sm_count, pwGpuId=0, uuid="u", luid=0,
            chipName="GH100", cuDevice=0, maxRegistersPerBlock=65536, maxShmemPerBlock=49152,
            maxShmemPerSm=233472, maxRegistersPerSm=65536, threadsPerWarp=32,
            maxWarpsPerSm=64, maxBlocksPerSm=32, maxThreadsPerBlock=1024, computeMajor=9,
            computeMinor=0)]
        if self.variant == "new":
            self.rows["TARGET_INFO_CUDA_DEVICE"] = [dict(gpuId=gpu_id, cudaId=0, pid=PID)]

    def api(self, name: str, ts: int, dur: int, *, tid: int = TID, pid: int = PID,
            corr: int | None = None, driver: bool = False) -> int:
        corr = self.next_corr() if corr is None else corr
        self._add("CUPTI_ACTIVITY_KIND_RUNTIME", start=ts, end=ts + dur,
                  eventClass=1 if driver else 0, globalTid=gtid(pid, tid), correlationId=corr,
                  nameId=self.sid(name), returnValue=0, callchainId=None)
        return corr

    def kernel(self, name: str, ts: int, dur: int, *, corr: int, pid: int = PID,
               stream: int = 7, grid: tuple[int, int, int] = (264, 1, 1),
               block: tuple[int, int, int] = (256, 1, 1), regs: int = 32,
               shared: int = 0, mangled: str | None = None, device: int = 0) -> None:
        self._add("CUPTI_ACTIVITY_KIND_KERNEL", start=ts, end=ts + dur, deviceId=device,
                  contextId=1, greenContextId=None, streamId=stream, correlationId=corr,
                  globalPid=gpid(pid), demangledName=self.sid(name), shortName=self.sid(name),
                  mangledName=self.sid(mangled) if mangled else None, launchType=1,
                  cacheConfig=0, registersPerThread=regs, gridX=grid[0], gridY=grid[1],
                  gridZ=grid[2], blockX=block[0], blockY=block[1], blockZ=block[2],
                  staticSharedMemory=shared, dynamicSharedMemory=0, localMemoryPerThread=0,
                  localMemoryTotal=0, gridId=corr, sharedMemoryExecuted=0, graphNodeId=None,
                  sharedMemoryLimitConfig=0)

    def memcpy(self, ts: int, dur: int, *, corr: int, nbytes: int = 1 << 20,
               copy_kind: int = 1, src: int = 0, dst: int = 2, pid: int = PID,
               stream: int = 7) -> None:
        self._add("CUPTI_ACTIVITY_KIND_MEMCPY", start=ts, end=ts + dur, deviceId=0, contextId=1,
                  greenContextId=None, streamId=stream, correlationId=corr, globalPid=gpid(pid),
                  bytes=nbytes, copyKind=copy_kind, deprecatedSrcId=None, srcKind=src,
                  dstKind=dst, srcDeviceId=None, srcContextId=None, dstDeviceId=None,
                  dstContextId=None, migrationCause=None, graphNodeId=None,
                  virtualAddress=None)

    def memset(self, ts: int, dur: int, *, corr: int, nbytes: int = 4096, mem_kind: int = 2,
               pid: int = PID, stream: int = 7) -> None:
        self._add("CUPTI_ACTIVITY_KIND_MEMSET", start=ts, end=ts + dur, deviceId=0, contextId=1,
                  greenContextId=None, streamId=stream, correlationId=corr, globalPid=gpid(pid),
                  value=0, bytes=nbytes, graphNodeId=None, memKind=mem_kind)

    def sync(self, ts: int, dur: int, *, corr: int, sync_type: int = 3) -> None:
        self._add("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", start=ts, end=ts + dur, deviceId=0,
                  contextId=1, greenContextId=None, streamId=7, correlationId=corr,
                  globalPid=gpid(), deprecatedSyncType=None, syncType=sync_type,
                  eventId=4294967295, eventSyncId=4294967295)

    def launch(self, api: str, ts: int, dur: int, *, kernel: str, k_ts: int, k_dur: int,
               tid: int = TID, **kw: Any) -> int:
        corr = self.api(api, ts, dur, tid=tid)
        self.kernel(kernel, k_ts, k_dur, corr=corr, **kw)
        return corr

    def copy(self, api: str, ts: int, dur: int, *, c_ts: int, c_dur: int, **kw: Any) -> int:
        corr = self.api(api, ts, dur)
        self.memcpy(c_ts, c_dur, corr=corr, **kw)
        return corr

    def nvtx(self, text: str, ts: int, end: int, *, tid: int = TID, style: str = "pushpop",
             domain: str | None = None, registered: bool = False, end_tid: int | None = None,
             payload: int | None = None) -> None:
        dom = 0
        if domain is not None:
            dom = 1 + sorted({*self._domains(), domain}).index(domain)
            if domain not in self._domains():
                self._add("NVTX_EVENTS", start=0, end=None, eventType=75, text=domain,
                          globalTid=gtid(tid=tid), domainId=dom)
        self._add("NVTX_EVENTS", start=ts, end=end, eventType=59 if style == "pushpop" else 60,
                  rangeId=None if style == "pushpop" else len(self.rows.get("NVTX_EVENTS", [])),
                  text=None if registered else text, textId=self.sid(text) if registered else None,
                  globalTid=gtid(tid=tid), endGlobalTid=gtid(tid=end_tid) if end_tid else None,
                  domainId=dom, int32Value=payload)

    def _domains(self) -> list[str]:
        return [r["text"] for r in self.rows.get("NVTX_EVENTS", []) if r.get("eventType") == 75]

    def mark(self, text: str, ts: int) -> None:
        self._add("NVTX_EVENTS", start=ts, end=None, eventType=34, text=text, globalTid=gtid(),
                  domainId=0)

    def osrt(self, name: str, ts: int, dur: int, *, tid: int = TID) -> None:
        self._add("OSRT_API", start=ts, end=ts + dur, eventClass=27, globalTid=gtid(tid=tid),
                  nameId=self.sid(name), returnValue=0, nestingLevel=0, callchainId=0)

    # ---- output ------------------------------------------------------------------
    def _columns(self, table: str) -> list[str]:
        v = self.variant
        return {
            "CUPTI_ACTIVITY_KIND_KERNEL": KERNEL_COLS[v], "CUPTI_ACTIVITY_KIND_MEMCPY":
            MEMCPY_COLS[v], "CUPTI_ACTIVITY_KIND_MEMSET": MEMSET_COLS[v],
            "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": SYNC_COLS[v],
            "CUPTI_ACTIVITY_KIND_RUNTIME": RUNTIME_COLS, "NVTX_EVENTS": NVTX_COLS[v],
            "OSRT_API": OSRT_COLS, "TARGET_INFO_GPU": GPU_COLS,
            "TARGET_INFO_CUDA_DEVICE": ["gpuId", "cudaId", "pid"],
        }[table]

    def write(self, path: Path, *, drop: dict[str, list[str]] | None = None) -> Path:
        """Write the export; ``drop`` removes columns (table -> names) to mimic versions."""
        path = Path(path)
        if path.exists():
            path.unlink()
        con = sqlite3.connect(path)
        meta = "EXPORT_META_DATA" if self.variant == "old" else "META_DATA_EXPORT"
        version = "3.1.7" if self.variant == "old" else "3.17.1"
        con.execute(f"CREATE TABLE {meta} (name TEXT, value TEXT)")
        con.executemany(f"INSERT INTO {meta} VALUES (?, ?)", [
            ("EXPORT_SCHEMA_VERSION", version), ("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"),
            ("EXPORT_PRODUCT_VERSION", "2023.2.3" if self.variant == "old" else "2025.1.1")])
        con.execute("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT)")
        con.executemany("INSERT INTO StringIds VALUES (?, ?)",
                        [(i, s) for s, i in self.strings.items()])
        for table, rows in self.rows.items():
            if not rows:
                continue
            cols = [c for c in self._columns(table) if c not in (drop or {}).get(table, [])]
            con.execute(f"CREATE TABLE {table} ({', '.join(cols)})")
            con.executemany(
                f"INSERT INTO {table} VALUES ({', '.join('?' * len(cols))})",
                [tuple(r.get(c) for c in cols) for r in rows])
        con.commit()
        con.close()
        return path
