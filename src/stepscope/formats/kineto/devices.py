"""Which devices a Kineto trace ran work on, and what is known about each.

Three sources, in order of trust: ``deviceProperties`` (PyTorch >= 1.10; every entry
version), the older ``computeProperties`` header (PyTorch 1.8/1.9: ``major``/``minor``/
``multiProcessorCount``), and the device ids on the device events themselves. Every device
that ran work is listed, even without properties (then with an empty name). When the
properties' ids and the kernels' device ids disagree, which ROCm traces do (properties
say id 0, kernels run on device 2 or 9 because ids are physical there), they are matched:
one described device and one used device are the same device; several described devices
with identical properties describe every used device. Each match is reported as a note.
"""

from __future__ import annotations

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope.formats.kineto.schema import DeviceProps
from stepscope.model.trace import DeviceProperties


def _entries(raw: msgspec.Raw) -> list[msgspec.Raw]:
    if not len(raw):
        return []
    try:
        items = msgspec.json.decode(raw, type=list[msgspec.Raw] | None)
    except (msgspec.MsgspecError, UnicodeDecodeError):
        return []
    return items or []


def read_device_props(*raws: msgspec.Raw) -> tuple[DeviceProperties, ...]:
    """Properties from the first non-empty header (deviceProperties, then computeProperties)."""
    for raw in raws:
        out = []
        for i, item in enumerate(_entries(raw)):
            try:
                try:
                    d = msgspec.json.decode(item, type=DeviceProps, strict=False)
                except UnicodeDecodeError:  # a bad byte in a name: U+FFFD, the entry kept
                    fixed = bytes(item).decode("utf-8", "replace").encode()
                    d = msgspec.json.decode(fixed, type=DeviceProps, strict=False)
            except (msgspec.MsgspecError, UnicodeDecodeError):
                continue
            out.append(DeviceProperties(
                id=d.id if d.id >= 0 else i, name=d.name or "", total_memory=d.totalGlobalMem,
                compute_major=d.computeMajor or d.major, compute_minor=d.computeMinor or d.minor,
                num_sms=d.numSms or d.multiProcessorCount,
                max_threads_per_sm=d.maxThreadsPerMultiprocessor or d.maxThreadsPerMultiProcessor,
                warp_size=d.warpSize,
            ))
        if out:
            return tuple(out)
    return ()


def _same(a: DeviceProperties, b: DeviceProperties) -> bool:
    return (a.name, a.total_memory, a.compute_major, a.compute_minor, a.num_sms) == (
        b.name, b.total_memory, b.compute_major, b.compute_minor, b.num_sms
    )


def devices_from_events(
    props: tuple[DeviceProperties, ...], used: npt.NDArray[np.int32]
) -> tuple[tuple[DeviceProperties, ...], list[str]]:
    """Properties for every device in ``props`` or ``used`` (device ids of device events).

    Returns (devices sorted by id, notes on how used ids were matched to properties).
    """
    used_ids = sorted({int(u) for u in np.unique(used) if u >= 0})
    by_id = {p.id: p for p in props}
    missing = [u for u in used_ids if u not in by_id]
    notes: list[str] = []
    if not missing:
        return tuple(sorted(props, key=lambda p: p.id)), notes
    described_unused = [p for p in props if p.id not in used_ids]
    template: DeviceProperties | None = None
    how = ""
    if len(props) == 1 and len(used_ids) == 1:
        template = props[0]
        how = "the only device described and the only device used"
    elif props and all(_same(p, props[0]) for p in props):
        template = props[0]
        how = "all described devices have identical properties"
    elif len(described_unused) == len(missing) == 1:
        template = described_unused[0]
        how = "the only described device without work and the only used device without properties"
    added = []
    for u in missing:
        if template is not None:
            added.append(DeviceProperties(
                id=u, name=template.name, total_memory=template.total_memory,
                compute_major=template.compute_major, compute_minor=template.compute_minor,
                num_sms=template.num_sms, max_threads_per_sm=template.max_threads_per_sm,
                warp_size=template.warp_size,
            ))
        else:
            added.append(DeviceProperties(u, "", 0, 0, 0, 0, 0, 0))
    ids = ", ".join(str(u) for u in missing)
    if template is not None:
        described = ", ".join(str(p.id) for p in props)
        notes.append(
            f"device properties describe device id(s) {described} but work ran on device(s) "
            f"{ids}; matched to {template.name or 'unnamed'} device {template.id} ({how})"
        )
    elif props:
        notes.append(f"no device properties for device(s) {ids} that ran work; listed unnamed")
    else:
        notes.append(f"the trace has no device properties; device(s) {ids} listed from the "
                     "events, unnamed")
    return tuple(sorted((*props, *added), key=lambda p: p.id)), notes
