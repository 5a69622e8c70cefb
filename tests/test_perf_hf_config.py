"""HuggingFace config.json shapes (placement/perf/hf_config.py): exact parameter counts and one-line refusals.

Each config is the published one's architecture fields, written out. Each expected total is worked out by hand
from the architecture in the comments (h hidden, L layers, a heads, g key/value heads, f FFN width, V vocabulary)
and equals the published count (``sum(p.numel() for p in model.parameters())`` of the HuggingFace model).
"""

from __future__ import annotations

import json

import pytest

from placement.errors import InvalidModelSpecError, PlacementError
from placement.perf.hf_config import MAX_CONFIG_BYTES, load_hf_config, model_from_argument, spec_from_hf_config
from placement.perf.layout import Layout
from placement.perf.megatron import megatron_args, parse_megatron_args
from placement.perf.transformer import MODELS

LLAMA3_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256,
    "max_position_embeddings": 8192, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": False,
    "attention_bias": False, "hidden_act": "silu", "torch_dtype": "bfloat16",
}  # fmt: skip
LLAMA3_70B = {**LLAMA3_8B, "hidden_size": 8192, "intermediate_size": 28672, "num_attention_heads": 64,
              "num_hidden_layers": 80}  # fmt: skip
MISTRAL_7B = {
    "model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
    "sliding_window": 4096, "tie_word_embeddings": False, "hidden_act": "silu",
}  # fmt: skip
QWEN2_7B = {
    "model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 131072,
    "tie_word_embeddings": False, "use_sliding_window": False, "hidden_act": "silu",
}  # fmt: skip
MIXTRAL_8X7B = {
    "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 32768,
    "num_local_experts": 8, "num_experts_per_tok": 2, "tie_word_embeddings": False,
}  # fmt: skip
GPT2 = {
    "model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024, "n_ctx": 1024,
    "vocab_size": 50257, "n_inner": None, "activation_function": "gelu_new", "resid_pdrop": 0.1,
    "attn_pdrop": 0.1, "embd_pdrop": 0.1,
}  # fmt: skip
PYTHIA_1_4B = {
    "model_type": "gpt_neox", "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 16,
    "num_hidden_layers": 24, "vocab_size": 50304, "max_position_embeddings": 2048, "rotary_pct": 0.25,
    "use_parallel_residual": True, "tie_word_embeddings": False, "hidden_dropout": 0.0, "attention_dropout": 0.0,
}  # fmt: skip


@pytest.mark.parametrize(
    "config, total",
    [
        # Llama-3-8B: per layer attention q,o 2 h^2 = 33,554,432, k,v 2 h (g d) = 2 x 4096 x 1024 = 8,388,608;
        # SwiGLU 3 h f = 3 x 4096 x 14336 = 176,160,768; two RMSNorms 8,192: 218,112,000; x 32 = 6,979,584,000.
        # Embedding and untied output 2 V h = 2 x 128256 x 4096 = 1,050,673,152; final norm 4,096.
        (LLAMA3_8B, 8_030_261_248),
        # Llama-3-70B: q,o 2 x 8192^2 = 134,217,728, k,v 2 x 8192 x 1024 = 16,777,216; SwiGLU 3 x 8192 x 28672
        # = 704,643,072; norms 16,384: 855,654,400 x 80 = 68,452,352,000; 2 V h = 2,101,346,304; final 8,192.
        (LLAMA3_70B, 70_553_706_496),
        # Mistral-7B-v0.1: Llama-3-8B's layers (6,979,584,000) and 2 x 32000 x 4096 = 262,144,000; final 4,096.
        (MISTRAL_7B, 7_241_732_096),
        # Qwen2-7B (d = 128, g d = 512): q,o 2 x 3584^2 = 25,690,112, k,v 2 x 3584 x 512 = 3,670,016, q/k/v biases
        # 3584 + 2 x 512 = 4,608; SwiGLU 3 x 3584 x 18944 = 203,685,888; norms 7,168: 233,057,792 x 28 =
        # 6,525,618,176; 2 x 152064 x 3584 = 1,089,994,752; final 3,584.
        (QWEN2_7B, 7_615_616_512),
        # Mixtral-8x7B: attention 41,943,040, 8 experts x 176,160,768 = 1,409,286,144, router 4096 x 8 = 32,768,
        # norms 8,192: 1,451,270,144 x 32 = 46,440,644,608; 2 x 32000 x 4096 = 262,144,000; final 4,096.
        (MIXTRAL_8X7B, 46_702_792_704),
        # GPT-2 (124M): per layer c_attn 768 x 2304 + 2304, c_proj 768^2 + 768, c_fc 768 x 3072 + 3072,
        # c_proj 3072 x 768 + 768, two LayerNorms 2 x 1536: 7,087,872 x 12 = 85,054,464; wte 50257 x 768 =
        # 38,597,376 (tied with the output), wpe 1024 x 768 = 786,432; ln_f 1,536.
        (GPT2, 124_439_808),
        # Pythia-1.4B (GPT-NeoX): qkv 2048 x 6144 + 6144, dense 2048^2 + 2048, MLP 2 x 2048 x 8192 + 8192 + 2048,
        # two LayerNorms 8,192: 50,358,272 x 24 = 1,208,598,528; embed_in and untied embed_out 2 x 50304 x 2048
        # = 206,045,184; final LayerNorm 4,096.
        (PYTHIA_1_4B, 1_414_647_808),
    ],
    ids=["llama3-8b", "llama3-70b", "mistral-7b", "qwen2-7b", "mixtral-8x7b", "gpt2", "pythia-1.4b"],
)
def test_parameter_count_is_the_published_total(config, total):
    assert spec_from_hf_config(config, "config.json").parameters() == total


def test_mixtral_active_parameters():
    # 2 of 8 experts per token: 46,702,792,704 - 6 x 176,160,768 x 32 = 12,879,925,248 (published: 12.9B active).
    spec = spec_from_hf_config(MIXTRAL_8X7B, "config.json")
    assert spec.active_parameters() == 12_879_925_248
    assert (spec.num_experts, spec.moe_topk) == (8, 2)


def test_llama3_configs_are_the_presets():
    """The HuggingFace configs give the presets' shapes (same layers, widths, vocabulary, sequence 8,192)."""
    assert spec_from_hf_config(LLAMA3_8B, "config.json") == MODELS["llama3-8b"]
    assert spec_from_hf_config(LLAMA3_70B, "config.json") == MODELS["llama3-70b"]


def test_family_specifics():
    gpt2 = spec_from_hf_config(GPT2, "gpt2/config.json")
    assert gpt2.name == "gpt2" and gpt2.tied_embeddings and not gpt2.rope and gpt2.positions == 1024
    assert gpt2.seq_length == 1024 and gpt2.ffn == 3072 and gpt2.bias and gpt2.dropout
    qwen = spec_from_hf_config(QWEN2_7B, "Qwen2-7B/config.json")
    assert qwen.qkv_bias and not qwen.bias and qwen.seq_length == 8192  # rotary: the table capped at 8,192
    neox = spec_from_hf_config(PYTHIA_1_4B, "config.json")
    assert neox.rope and neox.bias and not neox.tied_embeddings and neox.norm == "layernorm"
    tied = spec_from_hf_config({**QWEN2_7B, "tie_word_embeddings": True}, "config.json")
    assert tied.parameters() == 7_615_616_512 - 152064 * 3584
    biased = spec_from_hf_config({**LLAMA3_8B, "attention_bias": True, "mlp_bias": True}, "config.json")
    # q/k/v biases 4096 + 2 x 1024, o 4096, MLP 2 x 14336 + 4096 per layer
    assert biased.parameters() - 8_030_261_248 == 32 * (6144 + 4096 + 2 * 14336 + 4096)


def test_qkv_bias_round_trips_through_megatron_flags():
    spec = spec_from_hf_config(QWEN2_7B, "config.json")
    layout = Layout(tensor=4, data=2, global_batch=8)
    argv = megatron_args(spec, layout)
    assert "--add-qkv-bias" in argv and "--disable-bias-linear" in argv
    again, _, _ = parse_megatron_args(argv, gpus=8)
    assert again == spec and again.parameters() == spec.parameters()


@pytest.mark.parametrize(
    "change, words",
    [
        ({"model_type": "bert"}, "model_type: 'bert': not one of llama, mistral"),
        ({"model_type": None}, "model_type: missing"),
        ({"num_hidden_layers": None}, "num_hidden_layers: missing"),
        ({"hidden_size": "4096"}, "hidden_size: must be an integer, got '4096'"),
        ({"hidden_size": 4096.0}, "hidden_size: must be an integer"),
        ({"num_hidden_layers": True}, "num_hidden_layers: must be an integer"),
        ({"num_hidden_layers": 10**12}, "num_hidden_layers: must be from 1 to 2,147,483,648, got 1,000,000,000,000"),
        ({"vocab_size": 0}, "vocab_size: must be from 1"),
        ({"num_key_value_heads": 5}, "num_key_value_heads: 5 does not divide num_attention_heads 32"),
        ({"num_attention_heads": 30}, "hidden_size: 4,096 is not divisible by num_attention_heads 30"),
        ({"head_dim": 64}, "head_dim: 64 differs"),
        ({"tie_word_embeddings": "no"}, "tie_word_embeddings: must be true or false"),
        ({"attention_dropout": 2}, "attention_dropout: must be a number from 0 to 1"),
        ({"attention_bias": True}, "mlp_bias: False with attention_bias True"),
    ],
)
def test_bad_config_one_line_naming_file_and_field(change, words):
    config = {k: v for k, v in {**LLAMA3_8B, **change}.items() if v is not None}
    with pytest.raises(InvalidModelSpecError) as info:
        spec_from_hf_config(config, "team/config.json")
    message = str(info.value)
    assert message.startswith("team/config.json: ") and words in message and "\n" not in message


def test_top_level_not_an_object():
    with pytest.raises(InvalidModelSpecError, match="not a JSON object"):
        spec_from_hf_config([1, 2], "config.json")  # type: ignore[arg-type]


def test_model_from_argument_reads_presets_and_files(tmp_path):
    assert model_from_argument("Llama3_8B") == MODELS["llama3-8b"]
    path = tmp_path / "Mixtral-8x7B" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(MIXTRAL_8X7B))
    spec = model_from_argument(str(path))
    assert spec.name == "Mixtral-8x7B" and spec.parameters() == 46_702_792_704


@pytest.mark.parametrize(
    "content, words",
    [
        (b"", "not valid JSON"),
        (b"{'model_type': 'llama'}", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[" * 100_000, "nested too deeply"),
        (b" " * (MAX_CONFIG_BYTES + 1), f"over the {MAX_CONFIG_BYTES:,}-byte limit"),
    ],
)
def test_bad_files_one_line(tmp_path, content, words):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(InvalidModelSpecError) as info:
        load_hf_config(path)
    assert str(info.value).startswith(str(path)) and words in str(info.value)


def test_unknown_argument_names_presets(tmp_path):
    with pytest.raises(PlacementError, match="neither a preset .*llama3-8b.* nor a config.json"):
        model_from_argument("llama3-7b")
    with pytest.raises(PlacementError, match="no such file"):
        model_from_argument(str(tmp_path / "missing.json"))
    with pytest.raises(PlacementError, match="is a directory"):
        model_from_argument(str(tmp_path) + "/")
