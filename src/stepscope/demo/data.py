"""The demo's data: small compressed "images", decoded either per sample or once.

The slow pipeline does what many real ones do: decode, resize, normalise with statistics
recomputed per image and augment, one sample at a time, in the training process. The
fixed pipeline decodes and normalises everything once before training and leaves only
the cheap random flip per sample.
"""

from __future__ import annotations

import zlib

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

SOURCE_SIZE = 48  # stored images are larger than what the model sees, as usual
IMAGE_SIZE = 32
CHANNELS = 3
CLASSES = 10
PAD = 4


def make_samples(count: int, seed: int = 0) -> tuple[list[bytes], torch.Tensor]:
    """``count`` zlib-compressed uint8 images (the "files") and their labels."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (count, CHANNELS, SOURCE_SIZE, SOURCE_SIZE), dtype=np.uint8)
    encoded = [zlib.compress(img.tobytes(), 6) for img in images]
    labels = torch.from_numpy(rng.integers(0, CLASSES, count)).long()
    return encoded, labels


def decode(blob: bytes) -> torch.Tensor:
    """Decompress, resize to IMAGE_SIZE and normalise each channel of one image."""
    pixels = np.frombuffer(zlib.decompress(blob), dtype=np.uint8)
    x = torch.from_numpy(pixels.reshape(CHANNELS, SOURCE_SIZE, SOURCE_SIZE).copy()).float()
    x = F.interpolate(x.div(255.0)[None], size=(IMAGE_SIZE, IMAGE_SIZE), mode="bilinear",
                      antialias=True)[0]
    channels = [(ch - ch.mean()) / (ch.std() + 1e-6) for ch in x]
    return torch.stack(channels)


def augment(x: torch.Tensor, gen: np.random.Generator) -> torch.Tensor:
    """Random crop (zero padding) and horizontal flip, per sample."""
    x = F.pad(x, (PAD, PAD, PAD, PAD))  # zero fill, like torchvision RandomCrop(padding=4)
    i, j = gen.integers(0, 2 * PAD + 1, 2)
    x = x[:, i:i + IMAGE_SIZE, j:j + IMAGE_SIZE]
    return x.flip(2).contiguous() if gen.random() < 0.5 else x.contiguous()


class DecodeEveryTime(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Slow: all preprocessing per sample, per epoch, in the loop."""

    def __init__(self, encoded: list[bytes], labels: torch.Tensor, seed: int = 0) -> None:
        self.encoded = encoded
        self.labels = labels
        self.gen = np.random.default_rng(seed)

    def __len__(self) -> int:
        return len(self.encoded)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return augment(decode(self.encoded[index]), self.gen), self.labels[index]


class Predecoded(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Fixed: decoded and normalised once up front; only a flip remains per sample."""

    def __init__(self, encoded: list[bytes], labels: torch.Tensor, seed: int = 0) -> None:
        self.images = torch.stack([decode(blob) for blob in encoded])
        self.labels = labels
        self.seed = seed

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.images[index]
        # Deterministic per index so every worker process agrees without shared state.
        return (x.flip(2) if (index * 2654435761 + self.seed) & 1 else x), self.labels[index]
