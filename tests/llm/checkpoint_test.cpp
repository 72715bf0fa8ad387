// Hugging Face Llama checkpoints (llm/checkpoint.h): saved and loaded weights are equal and give
// equal logits (tied and untied heads, one file or shards), config.json fields, and an error for
// each way a checkpoint can be wrong.
#include "driver/compile.h"
#include "llm/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "api/tempo.h"
#include "nn/json.h"
#include "util/error.h"
#include "expect_error.h"

namespace tempo::llm {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / cat("tempo_llm_ckpt_", name, "_", ::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_text(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

std::string error_of(const std::function<void()>& f) { return testing::user_error_of(f); }

void expect_same(const HostTensor& a, const HostTensor& b, const std::string& what) {
  EXPECT_EQ(a.dtype, b.dtype) << what;
  EXPECT_EQ(a.shape, b.shape) << what;
  EXPECT_TRUE(a.data == b.data) << what << ": values differ";
}

void expect_same(const LlamaWeights& a, const LlamaWeights& b) {
  expect_same(a.embed, b.embed, "embed");
  expect_same(a.attn_norm, b.attn_norm, "attn_norm");
  expect_same(a.ffn_norm, b.ffn_norm, "ffn_norm");
  expect_same(a.wq, b.wq, "wq");
  expect_same(a.wk, b.wk, "wk");
  expect_same(a.wv, b.wv, "wv");
  expect_same(a.wo, b.wo, "wo");
  expect_same(a.w_gate, b.w_gate, "w_gate");
  expect_same(a.w_up, b.w_up, "w_up");
  expect_same(a.w_down, b.w_down, "w_down");
  expect_same(a.final_norm, b.final_norm, "final_norm");
  expect_same(a.head, b.head, "head");
}

void expect_same(const LlamaConfig& a, const LlamaConfig& b) {
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.dim, b.dim);
  EXPECT_EQ(a.layers, b.layers);
  EXPECT_EQ(a.heads, b.heads);
  EXPECT_EQ(a.kv_heads, b.kv_heads);
  EXPECT_EQ(a.ffn_hidden, b.ffn_hidden);
  EXPECT_EQ(a.norm_eps, b.norm_eps);
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.rope_factor, b.rope_factor);
  if (a.rope_factor > 0) {  // the other rope fields mean nothing without scaling
    EXPECT_EQ(a.rope_low_freq_factor, b.rope_low_freq_factor);
    EXPECT_EQ(a.rope_high_freq_factor, b.rope_high_freq_factor);
    EXPECT_EQ(a.rope_original_context, b.rope_original_context);
  }
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  EXPECT_EQ(a.max_context, b.max_context);
}

// The logits of a short greedy decode, every step, batch 2.
std::vector<HostTensor> logits_of(const LlamaConfig& c, const LlamaWeights& w) {
  const int64_t T = 6;
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  HostTensor prompt = HostTensor::from(std::vector<int64_t>{3, 9, 5, 1}, {2, 2});
  RT logits;
  decode_tokens(ctx, c, w, prompt, t, l, AttentionPattern::causal(), {}, &logits);
  logits = logits.retain();
  Executable exe = compile(ctx, {{t.bound, T}, {l.bound, c.layers}});
  exe.run();
  std::vector<HostTensor> out;
  for (int64_t s = 0; s < T; ++s) out.push_back(exe.get(logits, {s}));
  return out;
}

void round_trip(bool tied) {
  LlamaConfig c = LlamaConfig::tiny();
  c.tied_embeddings = tied;
  c.norm_eps = 1.25e-5;
  LlamaWeights w = LlamaWeights::random(c, 3);
  // Norm weights other than ones, so that a mix-up of the two norms shows.
  for (int64_t k = 0; k < w.ffn_norm.numel(); ++k) w.ffn_norm.ptr<float>()[k] = 0.5f + 0.01f * k;
  fs::path dir = temp_dir(tied ? "tied" : "untied");
  save_llama_checkpoint(dir.string(), c, w);
  auto names = nn::load((dir / "model.safetensors").string());
  EXPECT_EQ(names.count("lm_head.weight"), tied ? 0u : 1u);
  EXPECT_EQ(names.at("model.layers.1.self_attn.q_proj.weight").shape,
            (std::vector<int64_t>{c.heads * c.head_dim(), c.dim}));  // (out, in) on disk
  EXPECT_EQ(names.at("model.layers.0.mlp.down_proj.weight").shape,
            (std::vector<int64_t>{c.dim, c.ffn_hidden}));

  LlamaCheckpoint ck = load_llama_checkpoint(dir.string());
  expect_same(ck.config, c);
  expect_same(ck.weights, w);
  std::vector<HostTensor> want = logits_of(c, w), got = logits_of(ck.config, ck.weights);
  ASSERT_EQ(want.size(), got.size());
  for (size_t s = 0; s < want.size(); ++s) expect_same(got[s], want[s], cat("logits at step ", s));
  fs::remove_all(dir);
}

TEST(Checkpoint, SavedAndLoadedWeightsGiveEqualLogits) { round_trip(true); }

TEST(Checkpoint, UntiedHead) { round_trip(false); }

TEST(Checkpoint, FewerLayersThanTheFileHolds) {
  LlamaConfig c = LlamaConfig::tiny();
  LlamaWeights w = LlamaWeights::random(c, 4);
  fs::path dir = temp_dir("fewer");
  save_llama_checkpoint(dir.string(), c, w);
  LlamaConfig one = c;
  one.layers = 1;
  LlamaWeights w1 = load_llama_weights(dir.string(), one);
  EXPECT_EQ(w1.wq.shape, (std::vector<int64_t>{1, c.heads * c.head_dim(), c.dim}));
  EXPECT_TRUE(std::equal(w1.w_down.data.begin(), w1.w_down.data.end(), w.w_down.data.begin()));
  fs::remove_all(dir);
}

// A bfloat16 checkpoint (as Llama-3.2's are) loads its matmul weights and embedding as bfloat16,
// never widened: the same values the float32 route gave (widen, then round back) in half the
// memory, and the same logits, with a tied head (the embedding itself) or not; the norms are
// float32. nn::load widens unless told not to.
void half_checkpoint(bool tied) {
  LlamaConfig c = LlamaConfig::tiny();
  c.tied_embeddings = tied;
  const LlamaWeights w = LlamaWeights::random(c, 6);
  fs::path dir = temp_dir(tied ? "bf16_tied" : "bf16");
  nn::NamedTensors tensors = llama_hf_tensors(c, w);
  for (auto& [name, t] : tensors) t = t.to(DType::BFloat16);
  nn::save((dir / "model.safetensors").string(), tensors);
  write_text(dir / "config.json", llama_config_json(c));
  const std::string file = (dir / "model.safetensors").string();
  EXPECT_EQ(nn::load(file).at("model.norm.weight").dtype, DType::Float32);
  EXPECT_EQ(nn::load(file, /*keep_half=*/true).at("model.norm.weight").dtype, DType::BFloat16);

  LlamaWeights widened = w;  // the float32 route: every value rounded to bfloat16 and widened
  for (HostTensor* t : {&widened.embed, &widened.attn_norm, &widened.ffn_norm, &widened.wq,
                        &widened.wk, &widened.wv, &widened.wo, &widened.w_gate, &widened.w_up,
                        &widened.w_down, &widened.final_norm, &widened.head})
    if (!t->data.empty()) *t = t->to(DType::BFloat16).to(DType::Float32);
  const LlamaWeights f32_route = widened.with_matmul_dtype(DType::BFloat16);
  LlamaWeights want = f32_route;
  want.embed = want.embed.to(DType::BFloat16);
  const LlamaWeights loaded = load_llama_weights(dir.string(), c);
  EXPECT_EQ(loaded.matmul_dtype(), DType::BFloat16);
  expect_same(loaded, want);
  std::vector<HostTensor> a = logits_of(c, f32_route), b = logits_of(c, loaded);
  ASSERT_EQ(a.size(), b.size());
  for (size_t s = 0; s < a.size(); ++s) expect_same(b[s], a[s], cat("logits at step ", s));
  // Saved again, they stay half: the same weights load back, and config.json says bfloat16.
  LlamaConfig half = c;
  half.torch_dtype = DType::BFloat16;
  save_llama_checkpoint((dir / "again").string(), half, loaded);
  LlamaCheckpoint again = load_llama_checkpoint((dir / "again").string());
  EXPECT_EQ(again.config.torch_dtype, DType::BFloat16);
  expect_same(again.weights, want);
  fs::remove_all(dir);
}

TEST(Checkpoint, HalfWeightsStayHalf) { half_checkpoint(false); }

TEST(Checkpoint, HalfWeightsStayHalfTiedHead) { half_checkpoint(true); }

TEST(Checkpoint, ShardsListedByAnIndex) {
  LlamaConfig c = LlamaConfig::tiny();
  c.tied_embeddings = false;
  LlamaWeights w = LlamaWeights::random(c, 5);
  fs::path dir = temp_dir("sharded");
  nn::NamedTensors all = llama_hf_tensors(c, w);
  nn::NamedTensors first(all.begin(), all.begin() + all.size() / 2);
  nn::NamedTensors second(all.begin() + all.size() / 2, all.end());
  const std::string f1 = "model-00001-of-00002.safetensors", f2 = "model-00002-of-00002.safetensors";
  nn::save((dir / f1).string(), first);
  nn::save((dir / f2).string(), second);
  auto index = [&](const nn::NamedTensors& leave_out) {
    std::string map;
    for (const auto* part : {&first, &second})
      for (const auto& [name, t] : *part) {
        bool skip = false;
        for (const auto& [n2, t2] : leave_out) skip |= n2 == name;
        if (!skip)
          map += cat(map.empty() ? "" : ",", nn::json_quote(name), ":",
                     nn::json_quote(part == &first ? f1 : f2));
      }
    return cat(R"({"metadata":{"total_size":0},"weight_map":{)", map, "}}");
  };
  write_text(dir / "model.safetensors.index.json", index({}));
  write_text(dir / "config.json", llama_config_json(c));
  LlamaCheckpoint ck = load_llama_checkpoint(dir.string());
  expect_same(ck.config, c);
  expect_same(ck.weights, w);

  // A tensor that the index does not list; one whose shard lacks it; a shard that is missing.
  write_text(dir / "model.safetensors.index.json", index({{"model.norm.weight", {}}}));
  std::string e = error_of([&] { load_llama_checkpoint(dir.string()); });
  EXPECT_NE(e.find("'model.norm.weight' is not listed in the weight_map of "
                   "model.safetensors.index.json"),
            std::string::npos)
      << e;
  write_text(dir / "model.safetensors.index.json", index({}));
  nn::NamedTensors fewer = second;
  const std::string gone = fewer.back().first;
  fewer.pop_back();
  nn::save((dir / f2).string(), fewer);
  e = error_of([&] { load_llama_checkpoint(dir.string()); });
  EXPECT_NE(e.find(cat("no tensor '", gone, "' in ", f2)), std::string::npos) << e;
  fs::remove(dir / f2);
  e = error_of([&] { load_llama_checkpoint(dir.string()); });
  EXPECT_NE(e.find(cat("is in ", f2, ", which does not exist")), std::string::npos) << e;
  fs::remove_all(dir);
}

// Llama-3.2-1B's config.json as published (some fields left out).
const char* kConfig1b = R"({
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "bos_token_id": 128000,
  "eos_token_id": 128001,
  "head_dim": 64,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 8192,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 16,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 32.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
})";

TEST(Checkpoint, ReadsHuggingFaceConfig) {
  LlamaConfig c = parse_llama_config(kConfig1b, "config.json");
  expect_same(c, LlamaConfig::llama_3_2_1b());
  EXPECT_EQ(c.torch_dtype, DType::BFloat16);
  // Our own writer's text reads back, with and without rope scaling.
  LlamaConfig t = LlamaConfig::tiny();
  expect_same(parse_llama_config(llama_config_json(t), "t"), t);
  t.rope_factor = 0;
  t.rope_theta = 12345.678;
  t.max_context = 48;
  expect_same(parse_llama_config(llama_config_json(t), "t"), t);
  // Hugging Face's defaults for absent fields; "type" as the older spelling of rope_type.
  LlamaConfig d = parse_llama_config(
      R"({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
          "num_attention_heads": 4, "vocab_size": 50, "rope_scaling": {"type": "default"}})",
      "d");
  EXPECT_EQ(d.kv_heads, 4);
  EXPECT_EQ(d.norm_eps, 1e-6);
  EXPECT_EQ(d.rope_theta, 10000.0);
  EXPECT_EQ(d.rope_factor, 0.0);
  EXPECT_FALSE(d.tied_embeddings);
  EXPECT_EQ(d.max_context, 131072);
  EXPECT_EQ(d.torch_dtype, DType::Float32);
}

TEST(Checkpoint, ConfigErrors) {
  // The error for kConfig1b with `from` replaced by `to`.
  auto config_error = [](const std::string& from, const std::string& to) {
    std::string text = kConfig1b;
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    return error_of([&] { parse_llama_config(text, "cfg.json"); });
  };
  EXPECT_NE(config_error(R"("hidden_size": 2048,)", "").find("cfg.json: missing field 'hidden_size'"),
            std::string::npos);
  EXPECT_NE(config_error(R"("vocab_size": 128256)", R"("vocab_size": "many")")
                .find("field 'vocab_size' is not an integer"),
            std::string::npos);
  EXPECT_NE(config_error(R"("vocab_size": 128256)", R"("vocab_size": 1.5)")
                .find("field 'vocab_size' is not an integer"),
            std::string::npos);
  EXPECT_NE(config_error(R"("torch_dtype": "bfloat16")", R"("torch_dtype": "int8")")
                .find("cfg.json: torch_dtype 'int8' is not supported"),
            std::string::npos);
  EXPECT_NE(config_error(R"("rope_type": "llama3")", R"("rope_type": "yarn")")
                .find("unsupported rope_type 'yarn'"),
            std::string::npos);
  EXPECT_NE(config_error(R"("factor": 32.0,)", "").find("rope_scaling: missing field 'factor'"),
            std::string::npos);
  EXPECT_NE(config_error(R"("head_dim": 64)", R"("head_dim": 128)").find("head_dim 128"),
            std::string::npos);
  EXPECT_NE(config_error(R"("mlp_bias": false)", R"("mlp_bias": true)").find("mlp_bias"),
            std::string::npos);
  EXPECT_NE(config_error(R"("max_position_embeddings": 131072)", R"("max_position_embeddings": 0)")
                .find("max_context must be at least 1"),
            std::string::npos);
  EXPECT_NE(config_error(R"("num_key_value_heads": 8)", R"("num_key_value_heads": 5)")
                .find("kv_heads 5 must divide heads 32"),
            std::string::npos);
  EXPECT_NE(config_error(R"("tie_word_embeddings": true,)", R"("tie_word_embeddings": true)")
                .find("malformed cfg.json"),
            std::string::npos);

  fs::path dir = temp_dir("noconfig");
  std::string e = error_of([&] { load_llama_checkpoint(dir.string()); });
  EXPECT_NE(e.find("no config.json"), std::string::npos) << e;
  write_text(dir / "config.json", kConfig1b);
  e = error_of([&] { load_llama_checkpoint(dir.string()); });
  EXPECT_NE(e.find("neither model.safetensors nor model.safetensors.index.json"),
            std::string::npos)
      << e;
  fs::remove_all(dir);
}

TEST(Checkpoint, MissingAndMisshapedTensors) {
  LlamaConfig c = LlamaConfig::tiny();
  LlamaWeights w = LlamaWeights::random(c, 6);
  fs::path dir = temp_dir("tensors");
  save_llama_checkpoint(dir.string(), c, w);
  nn::NamedTensors all = llama_hf_tensors(c, w);
  auto rewrite = [&](const std::string& name, const HostTensor* replacement) {
    nn::NamedTensors changed;
    for (const auto& [n, t] : all)
      if (n != name) changed.emplace_back(n, t);
      else if (replacement) changed.emplace_back(n, *replacement);
    nn::save((dir / "model.safetensors").string(), changed);
    return error_of([&] { load_llama_checkpoint(dir.string()); });
  };
  std::string e = rewrite("model.layers.1.mlp.up_proj.weight", nullptr);
  EXPECT_NE(e.find("no tensor 'model.layers.1.mlp.up_proj.weight' in model.safetensors"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find(dir.string()), std::string::npos) << e;
  HostTensor wrong(DType::Float32, {c.dim, c.dim + 1});
  e = rewrite("model.layers.0.self_attn.k_proj.weight", &wrong);
  EXPECT_NE(e.find("tensor 'model.layers.0.self_attn.k_proj.weight' in model.safetensors has "
                   "shape [32, 33], expected [16, 32]"),
            std::string::npos)
      << e;
  HostTensor ints(DType::Int64, {c.dim});
  e = rewrite("model.norm.weight", &ints);
  EXPECT_NE(e.find("'model.norm.weight' in model.safetensors has dtype"), std::string::npos) << e;
  // An untied config needs lm_head.weight.
  rewrite("", nullptr);
  LlamaConfig untied = c;
  untied.tied_embeddings = false;
  write_text(dir / "config.json", llama_config_json(untied));
  e = error_of([&] { load_llama_checkpoint(dir.string()); });
  EXPECT_NE(e.find("no tensor 'lm_head.weight' in model.safetensors"), std::string::npos) << e;
  // Saving checks the weights against the config.
  e = error_of([&] { save_llama_checkpoint(dir.string(), untied, w); });
  EXPECT_NE(e.find("LlamaWeights::head is"), std::string::npos) << e;
  fs::remove_all(dir);
}

// config.json's layer count is checked against the tensors before the stacked weights are
// allocated: a huge num_hidden_layers is an error naming the first missing layer, not an
// allocation of that many layers.
TEST(Checkpoint, HugeLayerCountIsAMissingTensor) {
  LlamaConfig c = LlamaConfig::tiny();
  fs::path dir = temp_dir("huge_layers");
  save_llama_checkpoint(dir.string(), c, LlamaWeights::random(c, 7));
  LlamaConfig huge = c;
  huge.layers = int64_t{1} << 50;
  write_text(dir / "config.json", llama_config_json(huge));
  std::string e = error_of([&] { load_llama_checkpoint(dir.string()); });
  EXPECT_NE(e.find(cat("no tensor 'model.layers.", c.layers, ".input_layernorm.weight'")),
            std::string::npos)
      << e;
  fs::remove_all(dir);
}

// A weight_map names files of the checkpoint's directory, never a path elsewhere.
TEST(Checkpoint, WeightMapNamesOnlyFilesOfTheDirectory) {
  LlamaConfig c = LlamaConfig::tiny();
  fs::path dir = temp_dir("weight_map_paths");
  write_text(dir / "config.json", llama_config_json(c));
  for (const char* file : {"../model.safetensors", "/etc/passwd", "..", "", "sub\\x"}) {
    write_text(dir / "model.safetensors.index.json",
               cat(R"({"weight_map":{"model.embed_tokens.weight":)", nn::json_quote(file), "}}"));
    std::string e = error_of([&] { load_llama_checkpoint(dir.string()); });
    EXPECT_NE(e.find(cat("names '", file, "', which is not a file name in the checkpoint")),
              std::string::npos)
        << e;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tempo::llm
