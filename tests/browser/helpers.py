"""Shared steps of the browser tests: visit pages, compare numbers, drive the timeline."""

from __future__ import annotations

import json
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from tests.browser.conftest import shot

PAGES = ("overview", "operators", "kernels", "timeline", "findings")


def time_unit(column_us: Iterable[float | None]) -> tuple[str, float]:
    """The dashboard's unit for a set of µs values (format.ts ``timeUnit``): from the largest
    magnitude, s from 1 s, ms from 1 ms (as units.column_unit), else µs."""
    big = max((abs(v) for v in column_us if v is not None), default=0.0)
    return ("s", 1e6) if big >= 1e6 else ("ms", 1e3) if big >= 1e3 else ("µs", 1.0)


def shown_us(x: float | None, column_us: Iterable[float | None] | None = None) -> str:
    """The text of µs value ``x`` in a cell or card whose unit comes from ``column_us`` (``x``
    alone when not given): 3 decimals in the unit. JS toFixed rounds ties away from zero on the
    double's exact value (1062.5 µs is "1.063" ms where f"{1.0625:.3f}" says "1.062")."""
    if x is None:
        return "—"
    _, div = time_unit([x] if column_us is None else column_us)
    text = f"{Decimal(x / div).quantize(Decimal('0.001'), rounding=ROUND_HALF_UP):,}"
    return "0.000" if text == "-0.000" and x == 0 else text


def size_text(b: float | None) -> str:
    """format.ts ``bytes``: the binary unit that fits the value, 2 decimals, grouped; B whole
    (units.format_bytes in the terminal)."""
    if b is None:
        return "—"
    for unit, div in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(b) >= div:
            return f"{b / div:,.2f} {unit}"
    return f"{b:,.0f} B"


def signed(x: float, column_us: Iterable[float | None]) -> str:
    """A change as Compare shows it: "+1.234", "-0.500"."""
    return ("+" if x >= 0 else "") + shown_us(x, column_us)


def time_text(x: float) -> str:
    """A µs value with its own unit (format.ts ``timeText``): "98.562 ms"."""
    return f"{shown_us(x)} {time_unit([x])[0]}"


def column(rows: list[dict[str, Any]], key: str) -> list[Any]:
    return [r[key] for r in rows]


def columns(rows: list[dict[str, Any]], *keys: str) -> list[Any]:
    """The values of related columns that share one unit (Table's ``unit`` groups)."""
    return [r[k] for r in rows for k in keys]


OP_TIMES = ("host_self_us", "host_total_us", "device_self_us", "device_total_us")
PER_CALL = ("mean_us", "min_us", "max_us")


def cell(page: Any, selector: str) -> str:
    return str(page.locator(selector).first.inner_text()).strip()


def check_overview(page: Any, report: dict[str, Any], name: str) -> None:
    page.wait_for_selector("#page-overview", timeout=60_000)
    avg = report["breakdown"]["step_avg_us"]
    assert cell(page, "#step-avg") == shown_us(avg)
    assert cell(page, "#step-avg + .unit") == time_unit([avg])[0]
    cats = report["breakdown"]["avg_us"]
    assert cell(page, "#breakdown th:nth-child(2)") == f"avg {time_unit(cats.values())[0]} per step"
    for cat, v in cats.items():
        assert cell(page, f"#breakdown tr[data-cat='{cat}'] td[data-key='avg_us']") == \
            shown_us(v, cats.values())
        pct = report["breakdown"]["pct"][cat]
        assert cell(page, f"#breakdown tr[data-cat='{cat}'] td[data-key='pct']") == f"{pct:.2f}"
    for g in report["gpu"]:
        for key in ("utilization_pct", "sm_efficiency_pct"):
            if g[key] is not None:
                got = cell(page, f".card.gpu[data-device='{g['device']}'] td[data-key='{key}']")
                assert got == f"{g[key]:.2f} %"
    page.wait_for_selector("#steps-chart canvas")
    shot(page, f"{name}-overview")


def check_tables(page: Any, report: dict[str, Any], name: str) -> None:
    page.click("#nav-operators")
    page.wait_for_selector("#operators-table")
    ops = sorted(report["operators"], key=lambda r: -r["device_self_us"])
    if ops:
        row = page.locator("#operators-table tbody tr").first
        assert row.locator("td[data-key='name']").inner_text() == ops[0]["name"]
        assert row.locator("td[data-key='device_self_us']").inner_text() == \
            shown_us(ops[0]["device_self_us"], columns(ops, *OP_TIMES))
        unit = time_unit(columns(ops, *OP_TIMES))[0]
        assert cell(page, "#operators-table th[data-key='device_self_us']") == \
            f"device self {unit} ▼"
        assert row.locator("td[data-key='calls']").inner_text() == f"{ops[0]['calls']:,}"
        assert page.locator("#operators-table tbody tr").count() == len(ops)
        page.fill("#operators-table-search", ops[0]["name"])
        assert page.locator("#operators-table tbody tr").count() == \
            sum(ops[0]["name"].lower() in o["name"].lower() for o in ops)
    shot(page, f"{name}-operators")
    page.fill("#operators-table-search", "")
    page.select_option("#op-group", "stack")
    by_stack = report["operators_by_stack"]
    if by_stack:
        row = page.locator("#operators-table tbody tr").first
        assert row.locator("td[data-key='name']").inner_text() == by_stack[0]["name"]
        assert row.locator("td[data-key='device_self_us']").inner_text() == \
            shown_us(by_stack[0]["device_self_us"], columns(by_stack, *OP_TIMES))
    page.click("#nav-kernels")
    page.wait_for_selector("#page-kernels")
    ks = sorted(report["kernels"], key=lambda r: -r["total_us"])
    if ks:
        row = page.locator("#kernels-table tbody tr").first
        assert row.locator("td[data-key='name']").inner_text() == ks[0]["name"]
        for key in ("total_us", "mean_us", "max_us"):
            assert row.locator(f"td[data-key='{key}']").inner_text() == \
                shown_us(ks[0][key],
                         column(ks, key) if key == "total_us" else columns(ks, *PER_CALL))
        unit = time_unit(columns(ks, *PER_CALL))[0]  # mean | min | max: one unit
        for key in PER_CALL:
            label = key.removesuffix("_us")
            assert cell(page, f"#kernels-table th[data-key='{key}']") == f"{label} {unit}"
        page.click("#kernels-table th[data-key='calls']")  # sort by calls, descending
        assert row.locator("td[data-key='calls']").inner_text() == \
            f"{max(k['calls'] for k in ks):,}"  # counts grouped, as on every page
    shot(page, f"{name}-kernels")
    page.select_option("#kernel-group", "op")
    kops = report["kernels_by_operator"]
    if kops:
        row = page.locator("#kernel-ops-table tbody tr").first
        assert row.locator("td[data-key='operator']").inner_text() == kops[0]["operator"]
        assert row.locator("td[data-key='total_us']").inner_text() == \
            shown_us(kops[0]["total_us"], column(kops, "total_us"))
        assert row.locator("td[data-key='min_us']").inner_text() == \
            shown_us(kops[0]["min_us"], columns(kops, *PER_CALL))
    page.click("#nav-findings")
    page.wait_for_selector("#page-findings")
    cards = page.locator("#page-findings .finding")
    assert cards.count() == len(report["findings"])
    for i, f in enumerate(report["findings"]):
        c = cards.nth(i)
        from playwright.sync_api import expect

        # expect() waits for the card to render (inner_text() would read it mid-update)
        expect(c.locator(".title")).to_have_text(f["title"])
        saving = f["estimated_saving"]["us_per_step"]
        expect(c.locator(".saving-us")).to_have_text(shown_us(saving))
        expect(c.locator(".saving")).to_have_text(saving_text(f["estimated_saving"]))
    shot(page, f"{name}-findings")


def saving_text(s: dict[str, Any]) -> str:
    """A finding card's saving line: a replayed fix predicts the step ("saves …: predicted
    step A → B ms"), a bound is a ceiling ("saves up to …")."""
    us = s["us_per_step"]
    head = f"{shown_us(us)} {time_unit([us])[0]} per step ({s['pct_of_step']:.2f} % of the step)"
    if s["method"] == "replay" and s["predicted_step_us"] is not None:
        after = s["predicted_step_us"]
        both = [after + us, after]
        return (f"saves {head}: predicted step {shown_us(after + us, both)} → "
                f"{shown_us(after, both)} {time_unit(both)[0]} (replayed)")
    return f"saves up to {head}"


def view(page: Any) -> tuple[int, int]:
    cv = page.locator("#timeline-canvas")
    return int(cv.get_attribute("data-start")), int(cv.get_attribute("data-end"))


def lanes(page: Any) -> list[Any]:
    return json.loads(page.locator("#timeline-canvas").get_attribute("data-lanes"))  # type: ignore[no-any-return]


def drive_timeline(page: Any, name: str) -> dict[str, Any]:
    """Zoom (wheel, keys, box), pan, select a kernel, follow its flow arrow back to the launch."""
    page.click("#nav-timeline")
    page.wait_for_selector("#timeline-canvas[data-ready='1']", timeout=60_000)
    box = page.locator("#timeline-canvas").bounding_box()
    x0, y0 = box["x"], box["y"]
    mid_x = x0 + 200 + (box["width"] - 200) / 2
    s0, e0 = view(page)
    page.mouse.move(mid_x, y0 + 100)
    page.keyboard.down("Control")  # Perfetto's convention: Ctrl+wheel zooms, the wheel scrolls
    for _ in range(5):
        page.mouse.wheel(0, -400)  # zoom in around the cursor
    page.keyboard.up("Control")
    page.wait_for_timeout(200)
    s1, e1 = view(page)
    assert e1 - s1 < (e0 - s0) / 10
    page.keyboard.press("w")
    s2, e2 = view(page)
    assert e2 - s2 < e1 - s1
    page.keyboard.press("s")
    # pan by dragging: the window moves, its width stays
    s3, e3 = view(page)
    page.mouse.move(mid_x, y0 + 100)
    page.mouse.down()
    page.mouse.move(mid_x - 200, y0 + 100, steps=5)
    page.mouse.up()
    s4, e4 = view(page)
    assert s4 > s3 and abs((e4 - s4) - (e3 - s3)) <= 2
    # box zoom: shift+drag over 100 px
    page.keyboard.down("Shift")
    page.mouse.move(mid_x - 50, y0 + 100)
    page.mouse.down()
    page.mouse.move(mid_x + 50, y0 + 100, steps=4)
    page.mouse.up()
    page.keyboard.up("Shift")
    s5, e5 = view(page)
    assert e5 - s5 < (e4 - s4) / 5
    page.click("#zoom-reset")
    # Zoom in, then click along the first stream's lane until a kernel is selected.
    sel = -1
    page.keyboard.down("Control")
    for _ in range(6):
        page.mouse.move(mid_x, y0 + 100)
        page.mouse.wheel(0, -600)
        page.wait_for_timeout(150)
    page.keyboard.up("Control")
    page.wait_for_timeout(400)
    stream = next(ln for ln in lanes(page) if ln[0] == "stream")
    y = y0 + stream[2] + 2 + 7
    for k in range(60):
        cx = x0 + 225 + k * (box["width"] - 240) / 60  # past the 220 px gutter
        page.mouse.click(cx, y)
        page.wait_for_timeout(30)
        sel = int(page.locator("#timeline-canvas").get_attribute("data-selected") or -1)
        if sel >= 0:
            break
    assert sel >= 0, "no kernel under the clicks"
    page.wait_for_selector("#event-name")
    kernel = page.locator("#event-name").inner_text()
    page.mouse.move(cx + 1, y)  # hover: the tooltip names the event under the cursor
    page.wait_for_selector("#timeline-tip", state="visible")
    assert page.locator("#timeline-tip").inner_text().startswith(kernel[:20])
    shot(page, f"{name}-timeline-selected")
    follow = page.locator("#follow-flow")
    assert follow.count() == 1, f"kernel {kernel!r} has no flow"
    follow.click()
    page.wait_for_function(
        f"document.querySelector('#timeline-canvas').dataset.selected != '{sel}'")
    page.wait_for_timeout(300)
    launch = page.locator("#event-name").inner_text()
    shot(page, f"{name}-timeline-flow")
    # search highlights: the count shown is the number of matching events
    page.fill("#timeline-search", "Memcpy")
    page.wait_for_selector("#search-hits")
    hits = int(page.locator("#search-hits").inner_text().split()[0])
    page.fill("#timeline-search", "")
    return {"kernel": kernel, "launch": launch, "selected": sel, "hits": hits}
