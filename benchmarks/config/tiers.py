"""Tier lists per suite: tier number -> model names, for --filter-by-tier / --exclude-by-tier.

The one source: suites return theirs from here (`Suite.tiers`), and tools that select records
(aggregate.py, compare.py) read them here without importing the suites.

TorchBench's tiers are the ones upstream PyTorch/XLA's runner defines (names only; a name that a
checkout lacks simply selects nothing). torchvision's are ours, by cost on a CPU.
"""

TORCHBENCH_TIERS = {
    # The big models upstream tracks first.
    1: [
        "BERT_pytorch", "cm3leon_generate", "DALLE2_pytorch", "dlrm", "hf_GPT2", "hf_GPT2_large", "GPT_3",
        "hf_T5", "hf_T5_base", "hf_T5_generate", "hf_T5_large", "llama_v2_7b_16h", "stable_diffusion_xl",
    ],
    2: [
        "alexnet", "attention_is_all_you_need_pytorch", "Background_Matting", "basic_gnn_gcn", "basic_gnn_gin",
        "basic_gnn_sage", "dcgan", "densenet121", "detectron2_fasterrcnn_r_101_c4",
        "detectron2_fasterrcnn_r_101_dc5", "detectron2_fasterrcnn_r_101_fpn", "detectron2_fasterrcnn_r_50_c4",
        "detectron2_fasterrcnn_r_50_dc5", "detectron2_fasterrcnn_r_50_fpn", "detectron2_fcos_r_50_fpn",
        "detectron2_maskrcnn", "detectron2_maskrcnn_r_101_c4", "detectron2_maskrcnn_r_101_fpn",
        "detectron2_maskrcnn_r_50_c4", "detectron2_maskrcnn_r_50_fpn", "fastNLP_Bert", "functorch_dp_cifar10",
        "hf_Albert", "hf_Bart", "hf_Bert", "hf_Bert_large", "llama",
    ],
    3: ["doctr_det_predictor", "doctr_reco_predictor", "drq", "functorch_maml_omniglot"],
}

TORCHVISION_TIERS = {
    # Seconds per step on a laptop CPU at the default batch size: quick smoke runs.
    1: ["squeezenet1_1", "mobilenet_v3_small", "shufflenet_v2_x1_0", "resnet18", "mobilenet_v2",
        "regnet_y_400mf", "mnasnet1_0"],
    # The usual comparison set.
    2: ["resnet50", "mobilenet_v3_large", "alexnet", "densenet121", "efficientnet_b0", "convnext_tiny",
        "swin_t", "resnext50_32x4d", "googlenet", "regnet_x_1_6gf", "efficientnet_v2_s"],
    # Heavy on a CPU: minutes per config.
    3: ["vgg16", "vit_b_16", "inception_v3", "wide_resnet50_2", "resnet152", "convnext_base", "swin_b",
        "maxvit_t", "vit_l_16"],
}

DUMMY_TIERS = {1: ["mlp"], 2: ["cnn", "multi_output"]}

# Suite name -> its tiers; a suite not listed has none.
TIERS = {"torchbench": TORCHBENCH_TIERS, "torchvision": TORCHVISION_TIERS, "dummy": DUMMY_TIERS}


def of_suite(suite: str) -> dict:
    """Tier number -> model names of a suite ({} for a suite without tiers)."""
    return TIERS.get(suite, {})
