"""The demo's model: a small convolutional classifier (about 0.1 M parameters)."""

from __future__ import annotations

from torch import nn

from stepscope.demo.data import CHANNELS, CLASSES, IMAGE_SIZE


def small_cnn() -> nn.Module:
    side = IMAGE_SIZE // 4
    return nn.Sequential(
        nn.Conv2d(CHANNELS, 32, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(64 * side * side, CLASSES),
    )
