"""ThroughputMeter: exact numbers from an injected clock, warm-up, windows and epochs."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from stepscope.capture.throughput import ThroughputMeter, format_rate
from stepscope.errors import UsageError


class FakeClock:
    """Returns the given instants in order (binary-exact values keep float sums exact)."""

    def __init__(self, *times: float) -> None:
        self.times = list(times)

    def __call__(self) -> float:
        return self.times.pop(0)


def test_hand_computed_rate_skips_warmup() -> None:
    # start at 0; step ends at 4.0 (warm-up, not counted), 4.5, 5.5, 6.0
    clock = FakeClock(0.0, 4.0, 4.5, 5.5, 6.0)
    meter = ThroughputMeter(batch_size=8, warmup=1, clock=clock)
    meter.start()
    for _ in range(4):
        meter.step()
    # counted: 3 steps x 8 samples over (6.0 - 4.0) s = 24 / 2 = 12 samples/s
    assert meter.total.steps == 3
    assert meter.total.samples == 24
    assert meter.total.seconds == 2.0
    assert meter.samples_per_s == 12.0
    assert meter.format() == "[Throughput during profiled window] ~12.0 samples/sec"


def test_samples_per_step_override_and_windows() -> None:
    clock = FakeClock(0.0, 1.0, 1.25, 1.5, 2.0, 2.5)
    meter = ThroughputMeter(warmup=0, window=2, clock=clock)
    meter.start()
    for n in (10, 20, 30, 40, 50):
        meter.step(n)
    # windows of two counted steps: [1.0 s: 10 + 0.25 s: 20], [0.25 s: 30, 0.5 s: 40]
    assert [w.samples for w in meter.windows] == [30, 70]
    assert [w.seconds for w in meter.windows] == [1.25, 0.75]
    assert [w.first_step for w in meter.windows] == [1, 3]
    assert meter.windows[0].samples_per_s == 24.0
    assert meter.total.samples == 150 and meter.total.seconds == 2.5
    assert meter.samples_per_s == 60.0


def test_first_step_without_start_is_not_timed() -> None:
    meter = ThroughputMeter(batch_size=4, warmup=0, clock=FakeClock(10.0, 11.0, 13.0))
    for _ in range(3):
        meter.step()
    assert meter.total.steps == 2
    assert meter.samples_per_s == 8 / 3.0


def test_epochs_exclude_the_gap_before_the_next_epoch() -> None:
    clock = FakeClock(0.0, 1.0, 2.0, 100.0, 101.0, 101.5)
    meter = ThroughputMeter(batch_size=2, warmup=0, clock=clock)
    meter.start()  # 0.0
    meter.step()  # 1.0
    meter.step()  # 2.0
    first = meter.epoch_end()
    meter.start()  # 100.0: validation between epochs is not training time
    meter.step()  # 101.0
    meter.step()  # 101.5
    second = meter.epoch_end()
    assert (first.steps, first.samples, first.seconds) == (2, 4, 2.0)
    assert (second.steps, second.samples, second.seconds) == (2, 4, 1.5)
    assert meter.total.seconds == 3.5
    assert meter.epochs == [first, second]


def test_report_prints_the_label_and_unit() -> None:
    meter = ThroughputMeter(batch_size=1, warmup=0, unit="tokens", label="epoch 1",
                            clock=FakeClock(0.0, 0.5))
    meter.start()
    meter.step(2)
    out = io.StringIO()
    meter.report(out)
    assert out.getvalue() == "[Throughput during epoch 1] ~4.0 tokens/sec\n"


def test_verbose_prints_each_window(capsys: pytest.CaptureFixture[str]) -> None:
    meter = ThroughputMeter(batch_size=5, warmup=0, window=1, verbose=True,
                            clock=FakeClock(0.0, 2.0))
    meter.start()
    meter.step()
    assert capsys.readouterr().out == "[Throughput during window 1, steps 1-1] ~2.5 samples/sec\n"


def test_nothing_counted_yet() -> None:
    meter = ThroughputMeter(batch_size=1, clock=FakeClock(0.0))
    meter.step()
    assert meter.samples_per_s == 0.0
    assert "no steps counted" in meter.format()


def test_usage_errors() -> None:
    with pytest.raises(UsageError):
        ThroughputMeter(window=0)
    meter = ThroughputMeter(clock=FakeClock(0.0))
    with pytest.raises(UsageError, match="batch_size"):
        meter.step()


@pytest.mark.parametrize(("value", "text"), [
    (4.91, "4.9"), (0.0456, "0.046"), (12345.6, "12,346"), (99.96, "100"), (0.999, "1.0"),
    (150.4, "150"),
])
def test_format_rate(value: float, text: str) -> None:
    assert format_rate(value) == text


def test_sync_without_cuda_adds_no_call() -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("checks the CPU-only path")
    meter = ThroughputMeter(sync=True, clock=FakeClock(0.0))
    assert meter._sync is None


def test_importing_the_meter_does_not_import_torch() -> None:
    code = ("import sys; from stepscope import ThroughputMeter, annotate; "
            "m = ThroughputMeter(batch_size=1); m.start(); m.step()\n"
            "with annotate('x'): pass\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
