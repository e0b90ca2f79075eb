"""Dense peak FLOP/s per dtype and memory bandwidth of current GPUs, from vendor datasheets.

Every figure is the *dense* (no structured sparsity) peak the vendor publishes, in TFLOP/s,
and the memory bandwidth in GB/s (10^9 bytes/s). Where a datasheet gives a sparse figure only,
the row holds half of it. Conventions per column:

- fp64: the matrix (Tensor Core / MFMA) figure where one exists, else the vector figure;
- fp32: NVIDIA CUDA-core FP32 (NVIDIA has no FP32 matrix unit), AMD FP32 matrix (MFMA);
- tf32, bf16, fp16, fp8, fp4: matrix units. GeForce cards: the "with FP32 Accumulate"
  line of NVIDIA's whitepapers, because PyTorch's fp16/bf16 matmuls and convolutions
  (cuBLAS/cuDNN compute type FP32) and its FP8 ``_scaled_mm`` (cuBLASLt) accumulate in FP32;
  on GeForce that line is half the FP16-accumulate figure the spec sheets lead with (the
  professional and data-centre parts run both at the same rate). FP4 (RTX 50) has only an
  FP32-accumulate line, at 4x the FP8 one: it is not halved.

AMD MI210/MI250/MI250X: PyTorch sees one GCD as one device; MI250/MI250X rows hold half
the per-package (two-GCD) datasheet figures. A device is matched by its name (regex over
``deviceProperties.name``), the row's memory range choosing between memory variants; when
the name is empty or generic (ROCm writes "AMD Radeon Graphics" on some versions) the
(compute capability, CU count, memory) signature identifies the AMD parts listed in
``SIGNATURES``. ``None`` = the datasheet gives no figure for that dtype.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4")
GIB = 1024**3


@dataclass(frozen=True)
class GpuPeak:
    key: str  # the table's name for the part, e.g. "H100 SXM"
    pattern: str  # regex (case-insensitive) searched in the device name
    fp64: float | None
    fp32: float | None
    tf32: float | None
    bf16: float | None
    fp16: float | None
    fp8: float | None
    fp4: float | None
    gbps: float
    source: str
    memory_gib: tuple[float, float] = (0.0, 1e9)  # [lo, hi) device memory selecting the row

    def tflops(self, dtype: str) -> float | None:
        value: float | None = getattr(self, dtype, None) if dtype in DTYPES else None
        return value

    def peaks(self) -> dict[str, float | None]:
        return {d: self.tflops(d) for d in DTYPES}


def _row(key: str, pattern: str, fp64: float | None, fp32: float | None, tf32: float | None,
         bf16: float | None, fp16: float | None, fp8: float | None, fp4: float | None,
         gbps: float, source: str, memory_gib: tuple[float, float] = (0.0, 1e9)) -> GpuPeak:
    return GpuPeak(key, pattern, fp64, fp32, tf32, bf16, fp16, fp8, fp4, gbps, source, memory_gib)


# Sources: the vendor document and the table in it each row's figures come from. NVIDIA
# datasheets since A100 print Tensor Core figures as "dense | sparse*" or, since H100, only
# "with sparsity*": the row then holds half the printed figure. GeForce whitepapers print
# "dense/sparse" pairs; the rows take the dense number of the FP32-accumulate line.
_V100 = ("NVIDIA V100 Tensor Core GPU datasheet (volta-v100-datasheet-update-us-1165301-r5), "
         "specifications table, {} column")
_T4 = ("NVIDIA T4 Tensor Core GPU datasheet, specifications table (FP16 = 'Mixed Precision "
       "(FP16/FP32)')")
_A100_80 = ("NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4), "
            "Technical Specifications table, {} column (Tensor figures dense, sparse*)")
_A100_40 = ("NVIDIA A100 Tensor Core GPU datasheet (2020, A100 40GB edition), specifications "
            "table, {} column (Tensor figures dense, sparse*)")
_DENSE_SPARSE = "specifications table (Tensor figures 'dense | sparse*')"
_H100 = ("NVIDIA H100 Tensor Core GPU datasheet, Technical Specifications table, {} column "
         "(Tensor figures with sparsity*, halved)")
_H200 = ("NVIDIA H200 Tensor Core GPU datasheet, Technical Specifications table, {} column "
         "(Tensor figures with sparsity*, halved)")
_H800 = ("NVIDIA H800 Tensor Core GPU datasheet, Technical Specifications table, {} column "
         "(Tensor figures with sparsity*, halved)")
_GH200 = ("NVIDIA GH200 Grace Hopper Superchip datasheet, specifications table (Tensor figures "
          "'dense | sparse*'; {})")
_B200 = ("NVIDIA Blackwell datasheet, 'Individual Blackwell GPU Specifications' table, HGX B200 "
         "column (Tensor figures with sparsity, halved; TF32 printed as 2.2 PFLOPS)")
_AMD = "AMD Instinct {} accelerator data sheet, specifications table{}"
_AMD_GCD = ", halved: per GCD (the package figure covers two GCDs)"
_GA102 = ("NVIDIA Ampere GA102 GPU Architecture whitepaper v2, GeForce {} specifications "
          "table ('with FP32 Accumulate' rows, dense)")
_ADA = ("NVIDIA Ada GPU Architecture whitepaper v2.1, Appendix A, GeForce {} specifications "
        "table ('with FP32 Accumulate' rows, dense; FP8 row as corrected in v2.02)")
_RTXB = ("NVIDIA RTX Blackwell GPU Architecture whitepaper v1.1, Appendix A, GeForce {} "
         "specifications table ('with FP32 Accumulate' rows, dense)")
_DERIVED = ("derived from NVIDIA's GeForce {} product specifications (CUDA cores x boost clock; "
            "memory speed x bus width) with the per-SM rates of the {} whitepaper")
# A GeForce model name also prefixes its Ti/SUPER/D and Laptop variants, which have other
# core counts, clocks and memory: those must not take the desktop row's figures.
_DESKTOP = r"(?!.*Laptop)"

# Order matters: the first row whose pattern (and memory range) matches wins, so specific
# names come before their prefixes ("H100 NVL" before "H100").
TABLE: tuple[GpuPeak, ...] = (
    # Volta / Turing
    _row("V100S PCIe", r"V100S", 8.2, 16.4, None, None, 130, None, None, 1134,
         _V100.format("V100S PCIe")),
    _row("V100 PCIe", r"V100[- ]PCIE", 7.0, 14.0, None, None, 112, None, None, 900,
         _V100.format("V100 PCIe")),
    _row("V100 SXM2", r"V100", 7.8, 15.7, None, None, 125, None, None, 900,
         _V100.format("V100 SXM2")),
    _row("T4", r"\bT4\b", None, 8.1, None, None, 65, None, None, 320, _T4),
    # Ampere data centre
    _row("A100 PCIe 80GB", r"A100.*PCIE", 19.5, 19.5, 156, 312, 312, None, None, 1935,
         _A100_80.format("A100 80GB PCIe"), (60.0, 1e9)),
    _row("A100 PCIe 40GB", r"A100.*PCIE", 19.5, 19.5, 156, 312, 312, None, None, 1555,
         _A100_40.format("A100 PCIe")),
    _row("A100 SXM 80GB", r"A100", 19.5, 19.5, 156, 312, 312, None, None, 2039,
         _A100_80.format("A100 80GB SXM"), (60.0, 1e9)),
    _row("A100 SXM 40GB", r"A100", 19.5, 19.5, 156, 312, 312, None, None, 1555,
         _A100_40.format("A100 SXM4")),
    _row("A40", r"\bA40\b", None, 37.4, 74.8, 149.7, 149.7, None, None, 696,
         f"NVIDIA A40 datasheet, {_DENSE_SPARSE}"),
    _row("A10", r"\bA10\b", None, 31.2, 62.5, 125, 125, None, None, 600,
         f"NVIDIA A10 Tensor Core GPU datasheet, {_DENSE_SPARSE}"),
    # Ada data centre
    _row("L40S", r"\bL40S\b", None, 91.6, 183, 362.05, 362.05, 733, None, 864,
         f"NVIDIA L40S GPU datasheet, {_DENSE_SPARSE}"),
    _row("L40", r"\bL40\b", None, 90.5, 90.5, 181.05, 181.05, 362, None, 864,
         f"NVIDIA L40 GPU datasheet, {_DENSE_SPARSE}"),
    _row("L4", r"\bL4\b", None, 30.3, 60, 121, 121, 242.5, None, 300,
         "NVIDIA L4 Tensor Core GPU datasheet, specifications table (Tensor figures with "
         "sparsity*, halved)"),
    # Hopper
    _row("GH200 144GB HBM3e", r"GH200", 67, 67, 494, 990, 990, 1979, None, 4900,
         _GH200.format("HBM3e 144GB, 4.9 TB/s"), (120.0, 1e9)),
    _row("GH200 96GB HBM3", r"GH200", 67, 67, 494, 990, 990, 1979, None, 4000,
         _GH200.format("HBM3 96GB, 4 TB/s")),
    _row("H200 NVL", r"H200.*NVL", 60, 60, 417.5, 835.5, 835.5, 1670.5, None, 4800,
         _H200.format("H200 NVL")),
    _row("H200 SXM", r"H200", 67, 67, 494.5, 989.5, 989.5, 1979, None, 4800,
         _H200.format("H200 SXM")),
    _row("H800 PCIe", r"H800.*PCIE", 0.8, 51, 378, 756, 756, 1513, None, 2000,
         _H800.format("H800 PCIe")),
    _row("H800 SXM", r"H800", 1.0, 67, 494.5, 989.5, 989.5, 1979, None, 3350,
         _H800.format("H800 SXM")),
    _row("H100 NVL", r"H100.*NVL", 60, 60, 417.5, 835.5, 835.5, 1670.5, None, 3900,
         _H100.format("H100 NVL")),
    _row("H100 PCIe", r"H100.*PCIE", 51, 51, 378, 756, 756, 1513, None, 2000,
         _H100.format("H100 PCIe")),
    _row("H100 SXM", r"H100", 67, 67, 494.5, 989.5, 989.5, 1979, None, 3350,
         _H100.format("H100 SXM")),
    # Blackwell
    _row("B200", r"\bB200\b", 37, 75, 1100, 2250, 2250, 4500, 9000, 7700, _B200),
    # AMD Instinct (CDNA2: one GCD per device)
    _row("MI250X (one GCD)", r"MI250X", 47.85, 47.85, None, 191.5, 191.5, None, None, 1638.4,
         _AMD.format("MI250X", " (FP64/FP32 matrix 95.7, FP16/BF16 383.0 TFLOPs, 3.2768 TB/s)"
                     + _AMD_GCD)),
    _row("MI250 (one GCD)", r"MI250", 45.25, 45.25, None, 181.05, 181.05, None, None, 1638.4,
         _AMD.format("MI250", " (FP64/FP32 matrix 90.5, FP16/BF16 362.1 TFLOPs, 3.2768 TB/s)"
                     + _AMD_GCD)),
    _row("MI210", r"MI210", 45.3, 45.3, None, 181, 181, None, None, 1638.4,
         _AMD.format("MI210", " (FP64/FP32 matrix 45.3, FP16/BF16 181.0 TFLOPs, 1.6384 TB/s)")),
    _row("MI325X", r"MI325X", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, None, 6000,
         _AMD.format("MI325X", " (dense figures; 256 GB HBM3E, 6 TB/s)")),
    _row("MI300X", r"MI300X", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, None, 5300,
         _AMD.format("MI300X", " (dense figures; 192 GB HBM3, 5.3 TB/s)")),
    # GeForce (FP16/BF16/FP8 Tensor figures with FP32 accumulation; FP4 has only that line)
    _row("RTX 5090", r"RTX 5090(?! D\b)" + _DESKTOP, None, 104.8, 104.8, 209.5, 209.5, 419,
         1676, 1792, _RTXB.format("RTX 5090 (Table 3)")),
    _row("RTX 5080", r"RTX 5080" + _DESKTOP, None, 56.3, 56.3, 112.6, 112.6, 225.1, 900.4,
         960, _RTXB.format("RTX 5080")),
    _row("RTX 4090", r"RTX 4090(?! D\b)" + _DESKTOP, None, 82.6, 82.6, 165.2, 165.2, 330.3,
         None, 1008, _ADA.format("RTX 4090")),
    _row("RTX 4080", r"RTX 4080(?! SUPER)" + _DESKTOP, None, 48.7, 48.7, 97.5, 97.5, 194.9,
         None, 716.8, _ADA.format("RTX 4080 16GB")),
    _row("RTX 4070 Ti", r"RTX 4070 Ti(?! SUPER)" + _DESKTOP, None, 40.1, 40.1, 80.2, 80.2,
         160.4, None, 504.2, _ADA.format("RTX 4080 12GB (renamed RTX 4070 Ti)")),
    _row("RTX 4070", r"RTX 4070(?! Ti| SUPER)" + _DESKTOP, None, 29.1, 29.1, 58.3, 58.3, 116.6,
         None, 504, _DERIVED.format("RTX 4070", "Ada")),
    _row("RTX 3090 Ti", r"RTX 3090 Ti" + _DESKTOP, None, 40.0, 40.0, 80.0, 80.0, None, None,
         1008, "NVIDIA Ada GPU Architecture whitepaper v2.1, GeForce RTX 4090 vs RTX 3090 Ti "
         "comparison table, RTX 3090 Ti column ('with FP32 Accumulate' rows, dense)"),
    _row("RTX 3090", r"RTX 3090" + _DESKTOP, None, 35.6, 35.6, 71, 71, None, None, 936,
         _GA102.format("RTX 3090")),
    _row("RTX 3080 Ti", r"RTX 3080 Ti" + _DESKTOP, None, 34.1, 34.1, 68.2, 68.2, None, None,
         912, _DERIVED.format("RTX 3080 Ti", "GA102")),
    # the 12 GB RTX 3080 (70 SMs, 912 GB/s) is another part: only the 10 GB card matches
    _row("RTX 3080", r"RTX 3080" + _DESKTOP, None, 29.8, 29.8, 59.5, 59.5, None, None, 760,
         _GA102.format("RTX 3080 (10 GB)"), (0.0, 11.0)),
    _row("RTX 3070", r"RTX 3070(?! Ti)" + _DESKTOP, None, 20.3, 20.3, 40.6, 40.6, None, None,
         448, _GA102.format("RTX 3070")),
    # the 8 GB RTX 3060 has a 128-bit bus (240 GB/s): only the 12 GB card matches
    _row("RTX 3060", r"RTX 3060(?! Ti)" + _DESKTOP, None, 12.7, 12.7, 25.5, 25.5, None, None,
         360, _DERIVED.format("RTX 3060 12GB", "GA102"), (10.0, 1e9)),
)

_BY_KEY = {row.key: row for row in TABLE}

# (compute major, compute minor, multiprocessors/CUs) -> keys by memory, for AMD devices
# whose name is empty or generic. gfx90a with 104 CUs is an MI210 or one MI250 GCD: both
# have the same peaks and bandwidth, so the MI210 row stands for either.
SIGNATURES: dict[tuple[int, int, int], tuple[tuple[float, str], ...]] = {
    (9, 0, 104): ((0.0, "MI210"),),
    (9, 0, 110): ((0.0, "MI250X (one GCD)"),),
    (9, 4, 304): ((0.0, "MI300X"), (220.0, "MI325X")),
}


@dataclass(frozen=True)
class PeakMatch:
    peak: GpuPeak
    how: str  # "name" | "signature"


def match_peak(name: str, *, total_memory: int = 0, compute: tuple[int, int] = (0, 0),
               num_sms: int = 0) -> PeakMatch | None:
    """The table row for a device, or None when the device is not in the table."""
    gib = total_memory / GIB
    for row in TABLE:
        lo, hi = row.memory_gib
        if re.search(row.pattern, name, re.IGNORECASE) and (not gib or lo <= gib < hi):
            return PeakMatch(row, "name")
    choices = SIGNATURES.get((compute[0], compute[1], num_sms))
    if choices and (not name.strip() or "radeon graphics" in name.lower()):
        key = [k for lo, k in choices if gib >= lo][-1] if gib else choices[0][1]
        return PeakMatch(_BY_KEY[key], "signature")
    return None
