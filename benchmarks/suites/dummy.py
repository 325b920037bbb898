"""`dummy`: tiny built-in models for tests and quick checks (upstream's dummy suite could not train)."""

from benchmarks.suites import BenchmarkModel, Suite, model_config

MODELS = {"mlp": 16, "cnn": 8, "multi_output": 16}  # name -> default batch size


SUITE_NAME = "dummy"
DESCRIPTION = "small built-in models (they call torch.relu, for the relu_*_TESTING_ONLY backends)"
ORDER = 10


class DummySuite(Suite):
    name = SUITE_NAME

    def list_models(self, flags):
        return [model_config(self.name, name) for name in MODELS]

    def build(self, model_config, experiment, device, flags):
        from benchmarks.suites import dummy_models

        name = model_config["model_name"]
        batch_size = experiment.batch_size or MODELS[name]
        module, inputs = dummy_models.build(name, batch_size, device)
        return BenchmarkModel(module=module, example_inputs=inputs, batch_size=batch_size)


SUITE = DummySuite()
