"""Golden values for the paper's shared workloads (from sample_graphs/ and the workloads README).

These numbers come from the paper's released code, not from this project: the tests check
that our solvers and evaluator reproduce them.
"""

#: Optimal contiguous max-load with each file's own k, l and memory (the paper's DP).
OPTIMAL_MAX_LOAD = {
    "throughput/layer/bert24_inference.json": 17.78990625,
    "throughput/layer/bert24_training.json": 41.7458125,
    "throughput/layer/gnmt_inference.json": 32.910658203124996,
    "throughput/layer/gnmt_training.json": 107.0044140625,
    "throughput/layer/resnet50_inference.json": 33.774666015625,
    "throughput/layer/resnet50_training.json": 78.63181250000001,
    "throughput/operator/bert_l-3_inference.json": 27.9185676799125,
    "throughput/operator/bert_l-3_training.json": 65.30314912208605,
    "throughput/operator/resnet50_inference.json": 124.34884977404485,
}

#: Ideals counted by the paper's code after contracting color classes (where ours agree).
PAPER_IDEALS = {
    "throughput/layer/bert24_inference.json": 30,
    "throughput/layer/bert24_training.json": 30,
    "throughput/layer/resnet50_inference.json": 242,
    "throughput/layer/resnet50_training.json": 242,
    "throughput/operator/bert_l-3_inference.json": 1428,
    "throughput/operator/bert_l-3_training.json": 2774,
    "throughput/operator/resnet50_inference.json": 241,
}

#: Ideal pairs (I <= J) counted by the paper's code, where our lattices agree.
PAPER_PAIRS = {
    "throughput/layer/bert24_inference.json": 464,
    "throughput/layer/resnet50_inference.json": 28_971,
    "throughput/operator/bert_l-3_inference.json": 675_546,
    "throughput/operator/bert_l-3_training.json": 1_966_176,
    "throughput/operator/resnet50_inference.json": 28_729,
}

#: Max-load of the human-expert splits: (graph, split) -> value (4-6 significant digits in the README).
EXPERT_MAX_LOAD = {
    ("throughput/layer/bert24_inference.json", "expert-splits/bert24_inference_expert.json"): 20.084,
    ("throughput/layer/bert24_training.json", "expert-splits/bert24_training_expert.json"): 49.4049,
    ("throughput/layer/resnet50_inference.json", "expert-splits/resnet50_inference_expert.json"): 43.9183,
}

#: Everything on one accelerator (the README's "one accelerator" column).
ONE_ACCELERATOR = {
    "throughput/layer/bert24_inference.json": 92.406,
    "throughput/layer/bert24_training.json": 217.813,
    "throughput/layer/gnmt_inference.json": 182.563,
    "throughput/layer/gnmt_training.json": 520.453,
    "throughput/layer/resnet50_inference.json": 201.45,
    "throughput/layer/resnet50_training.json": 462.381,
}

#: Single-sample latency baselines on the latency inputs: greedy (Appendix F), DP split's latency.
LATENCY_BASELINES = {
    "latency/layer/bert24_inference.json": {"greedy": 100.219, "dp_split": 108.031},
    "latency/operator/bert_l-3_inference.json": {"greedy": 416.204, "dp_split": 414.441},
}
