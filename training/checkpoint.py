"""The model directory's config.json and model.safetensors: written as Hugging Face's
BloomForCausalLM.save_pretrained would (F16, "transformer." names, no lm_head.weight since
it is tied), and read back into the PyTorch model exactly as shipped."""

import json
import os

import torch

import bloom
import safetensors_io
from bpe import SPECIALS


def hf_config(config, seq_length):
    return {
        "architectures": ["BloomForCausalLM"],
        "model_type": "bloom",
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "n_layer": config.n_layer,
        "n_head": config.n_head,
        "n_inner": None,
        "layer_norm_epsilon": config.layer_norm_epsilon,
        "initializer_range": config.initializer_range,
        "apply_residual_connection_post_layernorm": False,
        "attention_dropout": 0.0,
        "hidden_dropout": 0.0,
        "attention_softmax_in_fp32": True,
        "masked_softmax_fusion": True,
        "bias_dropout_fusion": True,
        "skip_bias_add": True,
        "skip_bias_add_qkv": False,
        "pretraining_tp": 1,
        "slow_but_exact": False,
        "offset_alibi": 100,
        "unk_token_id": SPECIALS.index("<unk>"),
        "bos_token_id": SPECIALS.index("<s>"),
        "eos_token_id": SPECIALS.index("</s>"),
        "pad_token_id": SPECIALS.index("<pad>"),
        "seq_length": seq_length,  # the training length; ALiBi sets no position limit
        "tie_word_embeddings": True,
        "torch_dtype": "float16",
        "use_cache": True,
    }


def save(model, out_dir, seq_length):
    tensors = {f"transformer.{name}": t.detach().to(torch.float16).numpy()
               for name, t in model.transformer.state_dict().items()}
    safetensors_io.save(tensors, os.path.join(out_dir, "model.safetensors"))
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(hf_config(model.config, seq_length), f, indent=2)
        f.write("\n")


def load(out_dir):
    """(float32 BloomForCausalLM holding the shipped fp16 values, config dict, tensors)."""
    with open(os.path.join(out_dir, "config.json")) as f:
        config = json.load(f)
    tensors = safetensors_io.load(os.path.join(out_dir, "model.safetensors"))
    model = bloom.BloomForCausalLM(bloom.BloomConfig(
        vocab_size=config["vocab_size"], hidden_size=config["hidden_size"], n_layer=config["n_layer"],
        n_head=config["n_head"], layer_norm_epsilon=config["layer_norm_epsilon"]))
    state = {k.removeprefix("transformer."): torch.from_numpy(v.astype("float32")) for k, v in tensors.items()}
    model.transformer.load_state_dict(state, strict=True)
    return model.eval(), config, tensors
