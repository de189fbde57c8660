#pragma once
// A Hugging Face Refact checkpoint (gpt_refact) under the names of vkformer's slots. Its
// layers store attn.q [hidden, hidden] and the one K/V head fused as attn.kv [2 head_dim,
// hidden], and the SwiGLU MLP's halves fused as mlp.gate_up_proj [2 ffn, hidden] (the gate
// first, as modeling_gpt_refact.py splits it); the loader reads one fused QKV [q | k | v] and
// separate gate and up (families/refact.cpp). Nothing is copied: the view reads the stored
// tensors' rows by offset, so every reader of expected tensors (the loader, the checks, the
// float64 reference, vkf-quantize) sees attn.qkv, mlp.gate_proj and mlp.up_proj.

#include "host/io/safetensors.hpp"
#include "host/io/safetensors_writer.hpp"

#include <vector>

namespace vkf {

// Whether `checkpoint` stores Refact's fused attn.kv or mlp.gate_up_proj.
bool holds_refact_layout(const ShardedCheckpoint& checkpoint);

// `checkpoint` with every layer's attn.q + attn.kv presented as attn.qkv and its
// mlp.gate_up_proj as mlp.gate_proj and mlp.up_proj; every other tensor as it is. Throws
// vkf::Error naming the checkpoint and the tensor for an attn.q without its attn.kv (or the
// reverse), parts that differ in dtype or row length, or a gate_up_proj of odd rows.
ShardedCheckpoint present_refact_layout(ShardedCheckpoint checkpoint);

// The same for an opened checkpoint only when it holds Refact's layout, else it unchanged.
ShardedCheckpoint with_refact_layout(ShardedCheckpoint checkpoint);

// The writer's side: tensors named as the slots (attn.qkv, mlp.gate_proj, mlp.up_proj)
// turned into the Hugging Face layout, the values of each unchanged.
std::vector<TensorSource> refact_stored_tensors(std::vector<TensorSource> tensors);

}  // namespace vkf
