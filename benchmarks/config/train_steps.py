"""A train config's steps (the train_step axis's values): `harness`, the dynamo harness's step compiled whole, and
`forward_loss`, ours. The child's measured loop does each, the axis (benchmarks/features/train_step/) offers them, a
suite names its default (`Suite.default_train_step`), ExperimentConfig.harness_train_step asks for the harness's."""

HARNESS_TRAIN_STEP, DEFAULT_TRAIN_STEP = "harness", "forward_loss"
TRAIN_STEPS = (HARNESS_TRAIN_STEP, DEFAULT_TRAIN_STEP)
