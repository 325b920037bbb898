# labels: author::ptbench kind::plain
"""A plain PyTorch script: builds a small MLP and runs it once. Run it on its own (`python plain_mlp.py
--batch_size 8`) or benchmark it: experiment_runner.py --suite-name=scripts --script examples/scripts/plain_mlp.py
--script-args="--batch_size 8"."""

import torch

from benchmarks.suites.scripts_api import parameters


class MLP(torch.nn.Module):
    def __init__(self, features: int, hidden: int):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(features, hidden), torch.nn.ReLU(),
                                          torch.nn.Linear(hidden, 10))

    def forward(self, x):
        return self.layers(x)


def main():
    params = parameters(batch_size=4, features=32, hidden=64)
    model = MLP(params.features, params.hidden)
    inputs = torch.randn(params.batch_size, params.features)
    print("output", tuple(model(inputs).shape))


if __name__ == "__main__":
    main()
