"""What a dynamo config of a model run by generate compiles (the generation_compile axis's values): the child's
generate step (child/generation.py) does each, the axis (benchmarks/features/generation_options/) offers them."""

COMPILE_GENERATE, COMPILE_FORWARD = "generate", "forward"
COMPILE_CHOICES = (COMPILE_GENERATE, COMPILE_FORWARD)
