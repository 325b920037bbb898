"""The failing modules of the `faults` suite (child only)."""

import ctypes
import os
import time

import torch
from torch import nn


class _Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)


class Segfault(_Base):
    def forward(self, x):
        ctypes.string_at(0)  # reads address 0: SIGSEGV
        return self.fc(x)


class Hang(_Base):
    def forward(self, x):
        time.sleep(3600)
        return self.fc(x)


class MemoryHog(_Base):
    def forward(self, x):
        hoard = []
        for _ in range(48):  # 48 x 256 MiB = 12 GiB at most, then it gives up
            hoard.append(torch.ones(64 * 1024 * 1024))  # written, so resident
            time.sleep(0.05)
        return self.fc(x)


class SilentExit(_Base):
    def forward(self, x):
        os._exit(0)


class RandomOutput(_Base):
    def forward(self, x):
        # Seeded from the OS, so even two runs under the same torch seed differ.
        noise = torch.rand(x.shape[0], 8, generator=torch.Generator().manual_seed(int.from_bytes(os.urandom(7), "little")))
        return torch.relu(self.fc(x)) + noise.to(x.device)


MODELS = {
    "segfault": Segfault,
    "hang": Hang,
    "memory_hog": MemoryHog,
    "silent_exit": SilentExit,
    "random_output": RandomOutput,
}
