# labels: author::ptbench kind::two-models
"""A script with two models: an encoder feeds a classifier head, each called on its own, so the runner finds
two models, two_models.py::encoder and two_models.py::head. Plain arguments (argparse) work as well as the
helper: python two_models.py --batch_size 2 --width 16"""

import argparse

import torch


class Encoder(torch.nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)

    def forward(self, images):
        return self.pool(torch.relu(self.conv(images))).flatten(1)


class Head(torch.nn.Module):
    def __init__(self, classes: int):
        super().__init__()
        self.linear = torch.nn.Linear(8, classes)

    def forward(self, features):
        return self.linear(features).softmax(-1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=2)
    parser.add_argument("--width", type=int, default=16)
    parser.add_argument("--classes", type=int, default=5)
    args = parser.parse_args()
    encoder, head = Encoder(args.width), Head(args.classes)
    images = torch.randn(args.batch_size, 3, args.width, args.width)
    with torch.no_grad():
        features = encoder(images)
        print("classes", head(features).argmax(-1).tolist())


if __name__ == "__main__":
    main()
