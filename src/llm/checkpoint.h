// Hugging Face Llama checkpoints: a directory with config.json and the weights in
// model.safetensors, or in shards listed by model.safetensors.index.json ("weight_map": tensor
// name -> file). Tensors keep Hugging Face's names and (out, in) orientation on disk and in
// memory, where they are LlamaWeights (layers stacked). BF16/F16 files load as float32.
#pragma once

#include <string>

#include "llm/llama.h"
#include "nn/safetensors.h"

namespace tempo::llm {

struct LlamaCheckpoint {
  LlamaConfig config;
  LlamaWeights weights;
};

// The model shape from config.json's text (`what` names it in errors). Required: hidden_size,
// intermediate_size, num_hidden_layers, num_attention_heads, vocab_size; the rest default as in
// Hugging Face's LlamaConfig (num_key_value_heads = heads, rms_norm_eps 1e-6, rope_theta 10000,
// no rope_scaling, untied head). UserError on a missing or mistyped field, head_dim other than
// hidden_size / heads, a rope_type other than llama3 or default, biases, an activation not silu.
LlamaConfig parse_llama_config(const std::string& json_text, const std::string& what);
// DIR/config.json.
LlamaConfig read_llama_config(const std::string& dir);

// The weights of layers 0..c.layers-1 (a checkpoint may hold more layers; they are skipped).
// UserError naming the tensor and the file(s) searched when one is missing, and the expected and
// actual shapes when one is mis-shaped.
LlamaWeights load_llama_weights(const std::string& dir, const LlamaConfig& c);
// read_llama_config, then load_llama_weights.
LlamaCheckpoint load_llama_checkpoint(const std::string& dir);

// The weights under Hugging Face's names and shapes (what model.safetensors holds).
nn::NamedTensors llama_hf_tensors(const LlamaConfig& c, const LlamaWeights& w);
// config.json's text for c (its torch_dtype is c.torch_dtype).
std::string llama_config_json(const LlamaConfig& c);
// Writes DIR/config.json and DIR/model.safetensors (each tensor in its type: float32, or the half
// type of a half checkpoint's matmul weights and embedding), creating DIR if needed.
void save_llama_checkpoint(const std::string& dir, const LlamaConfig& c, const LlamaWeights& w);

}  // namespace tempo::llm
