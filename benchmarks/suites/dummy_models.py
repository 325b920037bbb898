"""Small built-in models (imported in the child only). They call torch.relu, not nn.ReLU, so that
torch's relu_*_TESTING_ONLY dynamo backends, which act on torch.relu calls, find them."""

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, width: int = 32, hidden: int = 128):
        super().__init__()
        self.fc1 = nn.Linear(width, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, width)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.out(x)


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = nn.functional.max_pool2d(x, 2)
        x = torch.relu(self.conv2(x))
        x = x.mean(dim=(2, 3))
        return self.head(x)


class MultiOutput(nn.Module):
    """Returns a dict holding a tensor and a tuple of tensors, like many real models do."""

    def __init__(self, width: int = 32):
        super().__init__()
        self.encoder = nn.Linear(width, 64)
        self.classifier = nn.Linear(64, 10)
        self.regressor = nn.Linear(64, 1)

    def forward(self, x):
        features = torch.relu(self.encoder(x))
        return {"logits": self.classifier(features), "aux": (features, self.regressor(features))}


def build(name: str, batch_size: int, device: str):
    generator = torch.Generator().manual_seed(0)
    if name == "mlp":
        return MLP().to(device), (torch.randn(batch_size, 32, generator=generator).to(device),)
    if name == "cnn":
        return SmallCNN().to(device), (torch.randn(batch_size, 3, 16, 16, generator=generator).to(device),)
    if name == "multi_output":
        return MultiOutput().to(device), (torch.randn(batch_size, 32, generator=generator).to(device),)
    raise KeyError(name)
