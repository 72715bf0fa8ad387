// Reading and writing Hugging Face Llama checkpoints (config.json + safetensors).
#include "llm/checkpoint.h"

#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "nn/json.h"
#include "util/error.h"

namespace tempo::llm {

namespace {

namespace fs = std::filesystem;
using nn::Json;

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t k = 0; k < shape.size(); ++k) s += cat(k ? ", " : "", shape[k]);
  return s + "]";
}

std::string read_text(const fs::path& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f || fs::is_directory(path))
    throw UserError(cat(what, ": ", path.string(), " does not exist or is not readable"));
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Typed access to config.json's fields, with errors naming the file and the field.
struct ConfigFields {
  const Json& root;
  const std::string& what;

  const Json* find(const char* key, Json::Kind kind, const char* kind_name) const {
    const Json* v = root.get(key);
    if (!v || v->kind == Json::Null) return nullptr;
    if (v->kind != kind) throw UserError(cat(what, ": field '", key, "' is not ", kind_name));
    return v;
  }
  const Json& need(const char* key, Json::Kind kind, const char* kind_name) const {
    const Json* v = find(key, kind, kind_name);
    if (!v) throw UserError(cat(what, ": missing field '", key, "'"));
    return *v;
  }
  int64_t integer(const char* key) const {
    const Json& v = need(key, Json::Number, "an integer");
    if (!v.is_int) throw UserError(cat(what, ": field '", key, "' is not an integer"));
    return v.integer;
  }
  int64_t integer(const char* key, int64_t fallback) const {
    return find(key, Json::Number, "an integer") ? integer(key) : fallback;
  }
  double number(const char* key) const { return need(key, Json::Number, "a number").number; }
  double number(const char* key, double fallback) const {
    const Json* v = find(key, Json::Number, "a number");
    return v ? v->number : fallback;
  }
  bool boolean(const char* key, bool fallback) const {
    const Json* v = find(key, Json::Bool, "true or false");
    return v ? v->boolean : fallback;
  }
  std::string string(const char* key, const std::string& fallback) const {
    const Json* v = find(key, Json::String, "a string");
    return v ? v->str : fallback;
  }
};

// Hugging Face's name for layer i's tensor `part`.
std::string layer_name(int64_t i, const char* part) {
  return cat("model.layers.", i, ".", part, ".weight");
}

// The tensors of a checkpoint directory, read file by file as they are first asked for.
class TensorSource {
 public:
  explicit TensorSource(const fs::path& dir) : dir_(dir) {
    const fs::path index = dir / "model.safetensors.index.json";
    if (fs::exists(index)) {
      const std::string what = cat("checkpoint index ", index.string());
      Json root = nn::parse_json(read_text(index, what), what);
      const Json* map = root.get("weight_map");
      if (!map || map->kind != Json::Object)
        throw UserError(cat(what, ": no \"weight_map\" object"));
      for (const auto& [name, file] : map->members) {
        if (file.kind != Json::String)
          throw UserError(cat(what, ": weight_map entry '", name, "' is not a file name"));
        // Shards are files of the checkpoint's directory: no path leads elsewhere.
        const std::string& f = file.str;
        if (f.empty() || f == "." || f == ".." ||
            f.find_first_of(std::string("/\\\0", 3)) != std::string::npos)
          throw UserError(cat(what, ": weight_map entry '", name, "' names '", file.str,
                              "', which is not a file name in the checkpoint directory"));
        file_of_[name] = file.str;
      }
      sharded_ = true;
    } else if (!fs::exists(dir / "model.safetensors")) {
      throw UserError(cat("checkpoint ", dir.string(),
                          ": neither model.safetensors nor model.safetensors.index.json exists"));
    }
  }

  // UserError unless the tensor `name` is there with the Hugging Face shape `shape` (checked
  // before memory is allocated for what the tensor goes into).
  void check(const std::string& name, const std::vector<int64_t>& shape) {
    std::string file;
    find(name, shape, &file);
  }

  // The tensor `name` of the Hugging Face shape `shape`, read from its file: as float32, or with
  // `keep_half` a float16 or bfloat16 tensor as the file holds it.
  HostTensor take(const std::string& name, const std::vector<int64_t>& shape,
                  bool keep_half = false) {
    std::string file;
    HostTensor t = find(name, shape, &file).read(name, /*keep_half=*/true);
    if (!ir::is_floating(t.dtype))
      throw UserError(cat("checkpoint ", dir_.string(), ": tensor '", name, "' in ", file,
                          " has dtype ", ir::dtype_name(t.dtype), ", expected a float type"));
    if (t.dtype == DType::Float32 || (keep_half && ir::is_half(t.dtype))) return t;
    return t.to(DType::Float32);
  }

 private:
  // The file holding tensor `name` (its name in *file_out), opened when first asked for.
  nn::SafetensorsReader& find(const std::string& name, const std::vector<int64_t>& shape,
                              std::string* file_out) {
    std::string file = "model.safetensors";
    if (sharded_) {
      auto it = file_of_.find(name);
      if (it == file_of_.end())
        throw UserError(cat("checkpoint ", dir_.string(), ": tensor '", name,
                            "' is not listed in the weight_map of model.safetensors.index.json"));
      file = it->second;
    }
    auto opened = files_.find(file);
    if (opened == files_.end()) {
      const fs::path path = dir_ / file;
      if (!fs::exists(path))
        throw UserError(cat("checkpoint ", dir_.string(), ": tensor '", name, "' is in ", file,
                            ", which does not exist"));
      opened = files_.emplace(file, std::make_unique<nn::SafetensorsReader>(path.string())).first;
    }
    nn::SafetensorsReader& reader = *opened->second;
    const std::vector<int64_t>* found = reader.shape(name);
    if (!found)
      throw UserError(cat("checkpoint ", dir_.string(), ": no tensor '", name, "' in ", file,
                          sharded_ ? " (where model.safetensors.index.json puts it)" : ""));
    if (*found != shape)
      throw UserError(cat("checkpoint ", dir_.string(), ": tensor '", name, "' in ", file,
                          " has shape ", shape_str(*found), ", expected ", shape_str(shape)));
    *file_out = file;
    return reader;
  }

  fs::path dir_;
  bool sharded_ = false;
  std::map<std::string, std::string> file_of_;
  std::map<std::string, std::unique_ptr<nn::SafetensorsReader>> files_;
};

// Layer i of a stacked (layers, ...) float tensor, as its own tensor.
HostTensor layer_of(const HostTensor& stacked, int64_t i) {
  std::vector<int64_t> shape(stacked.shape.begin() + 1, stacked.shape.end());
  HostTensor out(stacked.dtype, shape);
  const size_t bytes = out.data.size();
  std::memcpy(out.data.data(), stacked.data.data() + static_cast<size_t>(i) * bytes, bytes);
  return out;
}

void check_shape(const char* field, const HostTensor& t, const std::vector<int64_t>& shape) {
  if (t.shape != shape || (t.dtype != DType::Float32 && !ir::is_half(t.dtype)))
    throw UserError(cat("save_llama_checkpoint: LlamaWeights::", field, " is ",
                        ir::dtype_name(t.dtype), " ", shape_str(t.shape),
                        ", expected float32, float16 or bfloat16 ", shape_str(shape)));
}

std::string number_text(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back as v
  return std::string(buf, res.ptr);
}

}  // namespace

LlamaConfig parse_llama_config(const std::string& json_text, const std::string& what) {
  Json root = nn::parse_json(json_text, what);
  if (root.kind != Json::Object) throw UserError(cat(what, ": not a JSON object"));
  const ConfigFields f{root, what};
  LlamaConfig c;
  c.dim = f.integer("hidden_size");
  c.ffn_hidden = f.integer("intermediate_size");
  c.layers = f.integer("num_hidden_layers");
  c.heads = f.integer("num_attention_heads");
  c.kv_heads = f.integer("num_key_value_heads", c.heads);
  c.vocab = f.integer("vocab_size");
  c.max_context = f.integer("max_position_embeddings", c.max_context);
  c.norm_eps = f.number("rms_norm_eps", 1e-6);
  c.rope_theta = f.number("rope_theta", 10000.0);
  c.tied_embeddings = f.boolean("tie_word_embeddings", false);
  if (c.heads > 0 && f.find("head_dim", Json::Number, "an integer")) {
    const int64_t hd = f.integer("head_dim");
    if (hd != c.dim / c.heads || c.dim % c.heads != 0)
      throw UserError(cat(what, ": head_dim ", hd, " is not hidden_size / num_attention_heads (",
                          c.dim, " / ", c.heads, "); Tempo's decoder needs them equal"));
  }
  const std::string dtype = f.string("torch_dtype", "float32");
  if (dtype == "float16") c.torch_dtype = DType::Float16;
  else if (dtype == "bfloat16") c.torch_dtype = DType::BFloat16;
  else if (dtype != "float32" && dtype != "float64")
    throw UserError(cat(what, ": torch_dtype '", dtype,
                        "' is not supported (float32, float16, bfloat16 or float64)"));
  const std::string act = f.string("hidden_act", "silu");
  if (act != "silu") throw UserError(cat(what, ": hidden_act '", act, "' is not supported (silu)"));
  for (const char* bias : {"attention_bias", "mlp_bias"})
    if (f.boolean(bias, false))
      throw UserError(cat(what, ": ", bias, " is true; Tempo's Llama has no biases"));
  c.rope_factor = 0;
  if (const Json* rs = f.find("rope_scaling", Json::Object, "an object")) {
    const std::string rs_what = cat(what, ": rope_scaling");
    const ConfigFields r{*rs, rs_what};
    std::string type = r.string("rope_type", r.string("type", ""));
    if (type == "llama3") {
      c.rope_factor = r.number("factor");
      c.rope_low_freq_factor = r.number("low_freq_factor");
      c.rope_high_freq_factor = r.number("high_freq_factor");
      c.rope_original_context = r.integer("original_max_position_embeddings");
      if (c.rope_factor <= 0 || c.rope_original_context < 1 ||
          c.rope_high_freq_factor <= c.rope_low_freq_factor || c.rope_low_freq_factor <= 0)
        throw UserError(cat(rs_what, ": expected factor > 0, 0 < low_freq_factor < "
                                     "high_freq_factor and original_max_position_embeddings > 0"));
    } else if (type != "default") {
      throw UserError(cat(rs_what, ": unsupported rope_type '", type,
                          "' (Tempo supports llama3 and default)"));
    }
  }
  try {
    c.validate();
  } catch (const UserError& e) {
    throw UserError(cat(what, ": ", e.what()));
  }
  return c;
}

LlamaConfig read_llama_config(const std::string& dir) {
  const fs::path path = fs::path(dir) / "config.json";
  const std::string what = cat("checkpoint config ", path.string());
  if (!fs::exists(path))
    throw UserError(cat("checkpoint ", dir, ": no config.json (expected ", path.string(), ")"));
  return parse_llama_config(read_text(path, what), what);
}

LlamaWeights load_llama_weights(const std::string& dir, const LlamaConfig& c) {
  c.validate();
  if (!fs::is_directory(dir))
    throw UserError(cat("checkpoint ", dir, ": no such directory"));
  TensorSource src{fs::path(dir)};
  const int64_t L = c.layers, D = c.dim, hd = c.head_dim();
  const int64_t q = c.heads * hd, kv = c.kv_heads * hd, F = c.ffn_hidden;
  LlamaWeights w;
  w.embed = src.take("model.embed_tokens.weight", {c.vocab, D}, true);
  // Each layer's (out, in) matrix, copied into the stacked (layers, out, in) tensor: matmul
  // weights (`matmul`) and the embedding of a half type stay as the file holds them (float32
  // otherwise), so that a bfloat16 checkpoint is never widened. Every layer's tensor is checked
  // first: num_hidden_layers comes from config.json, and the stacked tensor is allocated for that
  // many layers.
  auto check_layers = [&](const char* part, const std::vector<int64_t>& shape) {
    for (int64_t i = 0; i < L; ++i) src.check(layer_name(i, part), shape);
  };
  auto stack = [&](const char* part, const std::vector<int64_t>& shape, bool matmul) {
    check_layers(part, shape);
    HostTensor first = src.take(layer_name(0, part), shape, matmul);
    std::vector<int64_t> stacked = {L};
    stacked.insert(stacked.end(), shape.begin(), shape.end());
    HostTensor s(first.dtype, stacked);
    const size_t bytes = first.data.size();
    for (int64_t i = 0; i < L; ++i) {
      HostTensor layer = i == 0 ? std::move(first) : src.take(layer_name(i, part), shape, matmul);
      if (layer.dtype != s.dtype) layer = layer.to(s.dtype);
      std::memcpy(s.data.data() + static_cast<size_t>(i) * bytes, layer.data.data(), bytes);
    }
    return s;
  };
  w.attn_norm = stack("input_layernorm", {D}, false);
  w.ffn_norm = stack("post_attention_layernorm", {D}, false);
  w.wq = stack("self_attn.q_proj", {q, D}, true);
  w.wk = stack("self_attn.k_proj", {kv, D}, true);
  w.wv = stack("self_attn.v_proj", {kv, D}, true);
  w.wo = stack("self_attn.o_proj", {D, q}, true);
  w.w_gate = stack("mlp.gate_proj", {F, D}, true);
  w.w_up = stack("mlp.up_proj", {F, D}, true);
  w.w_down = stack("mlp.down_proj", {D, F}, true);
  w.final_norm = src.take("model.norm.weight", {D});
  if (!c.tied_embeddings) w.head = src.take("lm_head.weight", {c.vocab, D}, true);
  // The matmul weights in one type: the file's, or float32 where it mixes types.
  DType matmul = w.wq.dtype;
  for (const HostTensor* m : {&w.wk, &w.wv, &w.wo, &w.w_gate, &w.w_up, &w.w_down, &w.head})
    if (!m->shape.empty() && m->dtype != matmul) matmul = DType::Float32;
  return std::move(w).with_matmul_dtype(matmul);
}

LlamaCheckpoint load_llama_checkpoint(const std::string& dir) {
  LlamaCheckpoint ck;
  ck.config = read_llama_config(dir);
  ck.weights = load_llama_weights(dir, ck.config);
  return ck;
}

nn::NamedTensors llama_hf_tensors(const LlamaConfig& c, const LlamaWeights& w) {
  c.validate();
  const int64_t L = c.layers, D = c.dim, hd = c.head_dim();
  const int64_t q = c.heads * hd, kv = c.kv_heads * hd, F = c.ffn_hidden;
  check_shape("embed", w.embed, {c.vocab, D});
  check_shape("attn_norm", w.attn_norm, {L, D});
  check_shape("ffn_norm", w.ffn_norm, {L, D});
  check_shape("wq", w.wq, {L, q, D});
  check_shape("wk", w.wk, {L, kv, D});
  check_shape("wv", w.wv, {L, kv, D});
  check_shape("wo", w.wo, {L, D, q});
  check_shape("w_gate", w.w_gate, {L, F, D});
  check_shape("w_up", w.w_up, {L, F, D});
  check_shape("w_down", w.w_down, {L, D, F});
  check_shape("final_norm", w.final_norm, {D});
  if (!c.tied_embeddings) check_shape("head", w.head, {c.vocab, D});

  nn::NamedTensors out;
  out.emplace_back("model.embed_tokens.weight", w.embed);
  for (int64_t i = 0; i < L; ++i) {
    out.emplace_back(layer_name(i, "input_layernorm"), layer_of(w.attn_norm, i));
    out.emplace_back(layer_name(i, "post_attention_layernorm"), layer_of(w.ffn_norm, i));
    out.emplace_back(layer_name(i, "self_attn.q_proj"), layer_of(w.wq, i));
    out.emplace_back(layer_name(i, "self_attn.k_proj"), layer_of(w.wk, i));
    out.emplace_back(layer_name(i, "self_attn.v_proj"), layer_of(w.wv, i));
    out.emplace_back(layer_name(i, "self_attn.o_proj"), layer_of(w.wo, i));
    out.emplace_back(layer_name(i, "mlp.gate_proj"), layer_of(w.w_gate, i));
    out.emplace_back(layer_name(i, "mlp.up_proj"), layer_of(w.w_up, i));
    out.emplace_back(layer_name(i, "mlp.down_proj"), layer_of(w.w_down, i));
  }
  out.emplace_back("model.norm.weight", w.final_norm);
  if (!c.tied_embeddings) out.emplace_back("lm_head.weight", w.head);
  return out;
}

namespace {

// config.json's name of a dtype.
const char* torch_dtype_name(DType d) {
  return d == DType::Float16 ? "float16" : d == DType::BFloat16 ? "bfloat16" : "float32";
}

}  // namespace

std::string llama_config_json(const LlamaConfig& c) {
  std::string rope = "null";
  if (c.rope_factor > 0)
    rope = cat("{\n    \"factor\": ", number_text(c.rope_factor),
               ",\n    \"low_freq_factor\": ", number_text(c.rope_low_freq_factor),
               ",\n    \"high_freq_factor\": ", number_text(c.rope_high_freq_factor),
               ",\n    \"original_max_position_embeddings\": ", c.rope_original_context,
               ",\n    \"rope_type\": \"llama3\"\n  }");
  return cat("{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n",
             "  \"hidden_act\": \"silu\",\n  \"attention_bias\": false,\n  \"mlp_bias\": false,\n",
             "  \"hidden_size\": ", c.dim, ",\n  \"intermediate_size\": ", c.ffn_hidden,
             ",\n  \"num_hidden_layers\": ", c.layers, ",\n  \"num_attention_heads\": ", c.heads,
             ",\n  \"num_key_value_heads\": ", c.kv_heads, ",\n  \"head_dim\": ", c.head_dim(),
             ",\n  \"vocab_size\": ", c.vocab,
             ",\n  \"max_position_embeddings\": ", c.max_context, ",\n  \"rms_norm_eps\": ", number_text(c.norm_eps),
             ",\n  \"rope_theta\": ", number_text(c.rope_theta), ",\n  \"rope_scaling\": ", rope,
             ",\n  \"tie_word_embeddings\": ", c.tied_embeddings ? "true" : "false",
             ",\n  \"torch_dtype\": \"", torch_dtype_name(c.torch_dtype), "\"\n}\n");
}

void save_llama_checkpoint(const std::string& dir, const LlamaConfig& c, const LlamaWeights& w) {
  nn::NamedTensors tensors = llama_hf_tensors(c, w);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError(cat("save_llama_checkpoint: cannot create ", dir, ": ", ec.message()));
  nn::save((fs::path(dir) / "model.safetensors").string(), tensors);
  const fs::path config = fs::path(dir) / "config.json";
  std::ofstream f(config, std::ios::binary | std::ios::trunc);
  f << llama_config_json(c);
  f.flush();
  if (!f) throw UserError(cat("save_llama_checkpoint: cannot write ", config.string()));
}

}  // namespace tempo::llm
