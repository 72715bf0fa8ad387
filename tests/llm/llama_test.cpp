// The Llama decoder (llm/llama.h) step by step against a full-sequence masked-attention forward
// pass in eager LibTorch (same weights): the logits of every step, for causal, sliding-window and
// attention-sink patterns, with the attention windows whole and in tiles; the rotary frequency
// scaling; configuration and pattern errors.
#include "driver/compile.h"
#include "llm/llama.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <functional>

#include "api/tempo.h"
#include "driver/executable_impl.h"
#include "e2e/e2e_util.h"
#include "expect_error.h"

namespace tempo::llm {
namespace {

using testing::expect_close;
using testing::to_torch;

// Float weights as a view (no element-wise copy: the 1b-shaped weights are large).
torch::Tensor T_(const HostTensor& h) {
  if (h.dtype != DType::Float32) return to_torch(h);
  return torch::from_blob(const_cast<uint8_t*>(h.data.data()), h.shape, torch::kFloat32);
}

bool allowed(const AttentionPattern& p, int64_t q, int64_t k) {
  if (k > q) return false;
  switch (p.kind) {
    case AttentionPattern::Kind::Causal:
      return true;
    case AttentionPattern::Kind::Window:
      return k > q - p.window;
    case AttentionPattern::Kind::Sinks:
      return k < p.sinks || k > q - p.window;
  }
  return false;
}

// All steps at once (the padded formulation): tokens (T, B) -> logits (T, B, vocab); the keys
// and values rounded to `kv` (a cache kept in a half type).
torch::Tensor eager_logits(const LlamaConfig& c, const LlamaWeights& w, const torch::Tensor& tok,
                           const AttentionPattern& p, torch::ScalarType kv = torch::kFloat32) {
  const int64_t T = tok.size(0), B = tok.size(1), H = c.heads, Hk = c.kv_heads, G = H / Hk;
  const int64_t hd = c.head_dim();
  auto rms = [&](const torch::Tensor& x, const torch::Tensor& g) {
    return x / (x.pow(2).mean(-1, true) + c.norm_eps).sqrt() * g;
  };
  std::vector<double> inv = rope_inverse_frequencies(c);
  torch::Tensor freqs = torch::tensor(std::vector<float>(inv.begin(), inv.end()));
  torch::Tensor ang = torch::arange(T, torch::kFloat32).unsqueeze(1) * freqs;  // (T, hd/2)
  torch::Tensor cos = torch::cat({ang.cos(), ang.cos()}, -1).view({T, 1, 1, hd});
  torch::Tensor sin = torch::cat({ang.sin(), ang.sin()}, -1).view({T, 1, 1, hd});
  auto rot = [&](const torch::Tensor& x) {  // (T, B, heads, hd)
    torch::Tensor lo = x.slice(-1, 0, hd / 2), hi = x.slice(-1, hd / 2, hd);
    return x * cos + torch::cat({-hi, lo}, -1) * sin;
  };
  torch::Tensor mask = torch::full({T, T}, -INFINITY);
  for (int64_t q = 0; q < T; ++q)
    for (int64_t k = 0; k < T; ++k)
      if (allowed(p, q, k)) mask[q][k] = 0.0;
  torch::Tensor embed = T_(w.embed);
  torch::Tensor x = embed.index_select(0, tok.reshape({-1})).view({T, B, c.dim});
  for (int64_t j = 0; j < c.layers; ++j) {
    torch::Tensor a = rms(x, T_(w.attn_norm)[j]);
    torch::Tensor q = rot(a.matmul(T_(w.wq)[j].t()).view({T, B, H, hd}));
    torch::Tensor k = rot(a.matmul(T_(w.wk)[j].t()).view({T, B, Hk, hd}));
    torch::Tensor v = a.matmul(T_(w.wv)[j].t()).view({T, B, Hk, hd});
    k = k.to(kv).to(torch::kFloat32), v = v.to(kv).to(torch::kFloat32);
    // (B, Hk, G, Tq, hd) x (B, Hk, 1, hd, Tk)
    torch::Tensor qg = q.view({T, B, Hk, G, hd}).permute({1, 2, 3, 0, 4});
    torch::Tensor kk = k.permute({1, 2, 3, 0}).unsqueeze(2);
    torch::Tensor s = qg.matmul(kk) / std::sqrt(static_cast<double>(hd)) + mask;
    torch::Tensor o = s.softmax(-1).matmul(v.permute({1, 2, 0, 3}).unsqueeze(2));  // (B,Hk,G,T,hd)
    o = o.permute({3, 0, 1, 2, 4}).reshape({T, B, H * hd});
    torch::Tensor x2 = x + o.matmul(T_(w.wo)[j].t());
    torch::Tensor f = rms(x2, T_(w.ffn_norm)[j]);
    torch::Tensor g = f.matmul(T_(w.w_gate)[j].t());
    x = x2 + (g * g.sigmoid() * f.matmul(T_(w.w_up)[j].t())).matmul(T_(w.w_down)[j].t());
  }
  torch::Tensor head = c.tied_embeddings ? embed.t() : T_(w.head).t();
  return rms(x, T_(w.final_norm)).matmul(head);
}

void check(const AttentionPattern& p, int64_t tile, bool tied = true, bool layers_first = false) {
  const int64_t T = 11, B = 2;
  LlamaConfig c = LlamaConfig::tiny();
  c.tied_embeddings = tied;
  LlamaWeights w = LlamaWeights::random(c, 7);
  torch::Tensor tok = torch::randint(c.vocab, {T, B}, torch::TensorOptions().dtype(torch::kInt64)
                                                          .requires_grad(false));
  Context ctx;
  Dim l = layers_first ? ctx.dim("l", "L") : Dim(), t = ctx.dim("t", "T");
  if (!layers_first) l = ctx.dim("l", "L");
  auto feed = [tok](const std::vector<HostTensor>&, const std::vector<int64_t>& at) {
    HostTensor h(DType::Int64, {tok.size(1)});
    for (int64_t b = 0; b < tok.size(1); ++b) h.ptr<int64_t>()[b] = tok[at[0]][b].item<int64_t>();
    return std::vector<HostTensor>{h};
  };
  RT tokens = ctx.udf("tokens", feed, {}, {TensorType{DType::Int64, {B}}}, {t})[0];
  RT logits = decoder_logits(ctx, c, w, tokens, t, l, p).retain();
  CompileOptions o;
  o.passes.check_ir = true;
  if (tile) o.passes.tiles = {{"t", tile}};
  Executable exe = compile(ctx, {{t.bound, T}, {l.bound, c.layers}}, o);
  exe.run();
  if (tile && !std::getenv("TEMPO_NO_PASS")) {  // the attention runs in tiles over n_t
    bool tiled = false;
    for (const ir::OpNode& op : exe.impl().graph.ops())
      for (const Dim& d : op.domain) tiled |= d.name() == "n_t";
    EXPECT_TRUE(tiled);
  }
  torch::Tensor want = eager_logits(c, w, tok, p);
  for (int64_t s = 0; s < T; ++s)
    expect_close(to_torch(exe.get(logits, {s})), want[s],
                 cat(p.str(), tile ? cat(", tiles of ", tile) : std::string(), " at step ", s),
                 2e-4);
}

TEST(Llama, CausalDecodingMatchesFullSequence) {
  torch::manual_seed(1);
  check(AttentionPattern::causal(), 0);
  check(AttentionPattern::causal(), 0, false);  // untied output head
  check(AttentionPattern::causal(), 0, true, true);  // domains (l, t): the cache in blocks
}

TEST(Llama, WindowAndSinkPatternsMatchMaskedAttention) {
  torch::manual_seed(2);
  check(AttentionPattern::sliding(4), 0);
  check(AttentionPattern::with_sinks(2, 3), 0);
  check(AttentionPattern::sliding(4), 0, true, true);  // the cache in window stores
}

TEST(Llama, TiledAttentionMatches) {
  torch::manual_seed(3);
  check(AttentionPattern::causal(), 4);
  check(AttentionPattern::sliding(4), 2);
}

// Greedy decoding after a 3-token prompt: every token equals the argmax of the eager model run on
// the sequence so far.
TEST(Llama, GreedyDecodingMatchesEager) {
  const int64_t T = 9, B = 2, P = 3;
  LlamaConfig c = LlamaConfig::tiny();
  LlamaWeights w = LlamaWeights::random(c, 11);
  HostTensor prompt(DType::Int64, {P, B});
  for (int64_t k = 0; k < P * B; ++k) prompt.ptr<int64_t>()[k] = (17 * k + 5) % c.vocab;
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  RT tokens = decode_tokens(ctx, c, w, prompt, t, l, AttentionPattern::sliding(4)).retain();
  Executable exe = compile(ctx, {{t.bound, T}, {l.bound, c.layers}});
  exe.run();
  torch::Tensor seq = to_torch(prompt).to(torch::kInt64);
  while (seq.size(0) < T) {
    torch::Tensor last = eager_logits(c, w, seq, AttentionPattern::sliding(4))[-1];
    seq = torch::cat({seq, last.argmax(-1).unsqueeze(0)}, 0);
  }
  for (int64_t s = 0; s < T; ++s)
    EXPECT_TRUE(torch::equal(to_torch(exe.get(tokens, {s})).to(torch::kInt64), seq[s]))
        << "step " << s << ": " << to_torch(exe.get(tokens, {s})) << " vs " << seq[s];
}

std::vector<std::vector<int64_t>> decode(const LlamaConfig& c, const LlamaWeights& w,
                                         const HostTensor& prompt, int64_t T, const Sampling& s,
                                         uint64_t seed = 0) {
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  RT tokens = decode_tokens(ctx, c, w, prompt, t, l, AttentionPattern::causal(), s).retain();
  CompileOptions o;
  o.seed = seed;
  Executable exe = compile(ctx, {{t.bound, T}, {l.bound, c.layers}}, o);
  exe.run();
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(prompt.shape[1]));
  for (int64_t k = 0; k < T; ++k) {
    HostTensor h = exe.get(tokens, {k});
    for (size_t b = 0; b < out.size(); ++b) out[b].push_back(h.ptr<int64_t>()[b]);
  }
  return out;
}

// Sampling with a temperature: valid ids after the prompt, one sequence per seed, and (at a high
// temperature) not the greedy one; an end-of-sequence token repeats once emitted.
TEST(Llama, SamplingAndEndOfSequence) {
  const int64_t T = 16;
  LlamaConfig c = LlamaConfig::tiny();
  c.tied_embeddings = false;  // a tied random model mostly repeats its input
  LlamaWeights w = LlamaWeights::random(c, 5);
  HostTensor prompt(DType::Int64, {2, 2});
  for (int64_t k = 0; k < 4; ++k) prompt.ptr<int64_t>()[k] = 3 + 10 * k;
  auto greedy = decode(c, w, prompt, T, {});
  auto hot = decode(c, w, prompt, T, {5.0, -1}, 1);
  EXPECT_EQ(hot, decode(c, w, prompt, T, {5.0, -1}, 1));
  EXPECT_NE(hot, greedy);
  EXPECT_NE(hot, decode(c, w, prompt, T, {5.0, -1}, 2));
  for (const auto& seq : hot)
    for (int64_t id : seq) EXPECT_TRUE(id >= 0 && id < c.vocab) << id;
  // The token greedy decoding emits at step 5 of sequence 0, made the end of sequence.
  const int64_t eos = greedy[0][5];
  auto ended = decode(c, w, prompt, T, {0.0, eos});
  int64_t first = 2;
  while (greedy[0][first] != eos) ++first;
  for (int64_t k = 0; k < T; ++k)
    EXPECT_EQ(ended[0][k], k <= first ? greedy[0][k] : eos) << "step " << k;
  EXPECT_THROW(decode(c, w, prompt, T, {-1.0, -1}), UserError);
  EXPECT_THROW(decode(c, w, prompt, T, {0.0, c.vocab}), UserError);
}

// The prompt's tokens (P, B), deterministic and within the vocabulary.
HostTensor make_prompt(int64_t P, int64_t B, int64_t vocab, int64_t salt = 0) {
  HostTensor prompt(DType::Int64, {P, B});
  for (int64_t k = 0; k < P * B; ++k) prompt.ptr<int64_t>()[k] = (31 * k + 7 + salt) % vocab;
  return prompt;
}

// generate's outputs after a run: tokens (N, B) and logits (N + 1, B, vocab), the first row the
// prefill's (position P - 1), then decoding step t's (position P + t).
struct Generated {
  torch::Tensor tokens, logits;
};

Generated run_generate(const LlamaConfig& c, const LlamaWeights& w, const HostTensor& prompt,
                       int64_t N, const AttentionPattern& p, const Sampling& s = {},
                       int64_t tile = 0, uint64_t seed = 0) {
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  Generation g = generate(ctx, c, w, prompt, t, l, p, s);
  RT tokens = g.tokens.retain(), logits = g.logits.retain(), first = g.prefill_logits.retain();
  CompileOptions o;
  o.seed = seed;
  o.passes.check_ir = true;
  if (tile) o.passes.tiles = {{"t", tile}};
  Executable exe = compile(ctx, {{t.bound, N}, {l.bound, c.layers}}, o);
  exe.run();
  Generated out;
  std::vector<torch::Tensor> toks, logs{to_torch(exe.get(first, {}))};
  for (int64_t k = 0; k < N; ++k) {
    toks.push_back(to_torch(exe.get(tokens, {k})).to(torch::kInt64));
    logs.push_back(to_torch(exe.get(logits, {k})));
  }
  out.tokens = torch::stack(toks);
  out.logits = torch::stack(logs);
  return out;
}

// The prefill's logits at the last prompt position and every decoding step's after it equal
// token-by-token decoding's (decode_tokens over the same P + N steps) and the eager reference's
// on the whole sequence; the generated tokens are the same.
void check_prefill(const AttentionPattern& p, int64_t P, int64_t N, int64_t tile = 0) {
  const int64_t B = 2;
  LlamaConfig c = LlamaConfig::tiny();
  c.tied_embeddings = false;  // varied tokens: a tied random model mostly repeats its input
  LlamaWeights w = LlamaWeights::random(c, 13);
  HostTensor prompt = make_prompt(P, B, c.vocab);
  const std::string what = cat(p.str(), ", prompt of ", P, tile ? cat(", tiles of ", tile) : "");
  Generated g = run_generate(c, w, prompt, N, p, {}, tile);

  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  RT logits;
  RT tokens = decode_tokens(ctx, c, w, prompt, t, l, p, {}, &logits).retain();
  logits = logits.retain();
  Executable exe = compile(ctx, {{t.bound, P + N}, {l.bound, c.layers}});
  exe.run();
  torch::Tensor seq = torch::cat({to_torch(prompt).to(torch::kInt64), g.tokens}, 0);
  torch::Tensor want = eager_logits(c, w, seq, p);
  for (int64_t k = 0; k <= N; ++k) {
    const std::string at = cat(what, ", position ", P - 1 + k);
    expect_close(g.logits[k], to_torch(exe.get(logits, {P - 1 + k})), "prefill vs steps, " + at,
                 2e-4);
    expect_close(g.logits[k], want[P - 1 + k], "prefill vs eager, " + at, 2e-4);
    if (k < N) {
      EXPECT_TRUE(torch::equal(g.tokens[k], to_torch(exe.get(tokens, {P + k})).to(torch::kInt64)))
          << at;
    }
  }
}

// Matmul weights kept as float16 or bfloat16 (batches of 3 and 5 rows: every tile shape of the
// widening kernel): the float32 program's tokens and, up to the order of float32 sums, its logits
// with the weights rounded the same way. Kept as bfloat16, the first 32 greedy tokens are
// unrounded float32's, tied head or not.
TEST(Llama, HalfMatmulWeights) {
  LlamaConfig c = LlamaConfig::tiny();
  c.tied_embeddings = false;  // varied tokens: a tied random model mostly repeats its input
  const LlamaWeights w = LlamaWeights::random(c, 13);
  for (auto [dt, B] : {std::pair{DType::Float16, 3}, std::pair{DType::BFloat16, 5}}) {
    HostTensor prompt = make_prompt(4, B, c.vocab);
    LlamaWeights half = w.with_matmul_dtype(dt);
    EXPECT_EQ(half.wq.dtype, dt);
    EXPECT_EQ(half.embed.dtype, DType::Float32);
    Generated g = run_generate(c, half, prompt, 12, AttentionPattern::causal());
    Generated want =
        run_generate(c, half.with_matmul_dtype(DType::Float32), prompt, 12, AttentionPattern::causal());
    EXPECT_TRUE(torch::equal(g.tokens, want.tokens)) << ir::dtype_name(dt);
    EXPECT_LT((g.logits - want.logits).abs().max().item<double>(), 1e-4) << ir::dtype_name(dt);
  }
  for (bool tied : {false, true}) {
    c.tied_embeddings = tied;
    const LlamaWeights f32 = LlamaWeights::random(c, 17);
    HostTensor prompt = make_prompt(3, 2, c.vocab);
    Generated bf16 = run_generate(c, f32.with_matmul_dtype(DType::BFloat16), prompt, 32,
                                  AttentionPattern::causal());
    EXPECT_TRUE(torch::equal(bf16.tokens,
                             run_generate(c, f32, prompt, 32, AttentionPattern::causal()).tokens))
        << "tied " << tied;
  }
  EXPECT_THROW(w.with_matmul_dtype(DType::Int64), UserError);
}

// The K/V cache kept as float16 or bfloat16 (LlamaConfig::kv_dtype), after a prefill and over
// two patterns (one piece of cache per step, and the prompt's and the steps' pieces): the eager
// reference's logits with its keys and values rounded the same way, not float32's.
TEST(Llama, HalfKVCache) {
  LlamaConfig c = LlamaConfig::tiny();
  c.tied_embeddings = false;  // varied tokens: a tied random model mostly repeats its input
  const LlamaWeights w = LlamaWeights::random(c, 19);
  const HostTensor prompt = make_prompt(4, 3, c.vocab);
  for (const AttentionPattern& p :
       {AttentionPattern::causal(), AttentionPattern::with_sinks(2, 3)}) {
    const Generated f32 = run_generate(c, w, prompt, 6, p);
    for (auto [dt, st] : {std::pair{DType::Float16, torch::kHalf},
                          std::pair{DType::BFloat16, torch::kBFloat16}}) {
      LlamaConfig half = c;
      half.kv_dtype = dt;
      const Generated g = run_generate(half, w, prompt, 6, p);
      const torch::Tensor seq = torch::cat({to_torch(prompt).to(torch::kInt64), g.tokens}, 0);
      const torch::Tensor want = eager_logits(c, w, seq, p, st).slice(0, 3);
      const std::string what = cat(p.str(), ", ", ir::dtype_name(dt), " cache");
      expect_close(g.logits, want, what, 2e-4);
      EXPECT_GT((g.logits - f32.logits).abs().max().item<double>(), 1e-5) << what;
    }
  }
  c.kv_dtype = DType::Int64;
  EXPECT_THROW(c.validate(), UserError);
}

TEST(Llama, PrefillMatchesTokenByTokenDecoding) {
  check_prefill(AttentionPattern::causal(), 5, 6);
  check_prefill(AttentionPattern::causal(), 1, 4);  // a one-token prompt
  check_prefill(AttentionPattern::sliding(4), 3, 7);
  check_prefill(AttentionPattern::sliding(3), 7, 5);  // the prompt longer than the window
  check_prefill(AttentionPattern::with_sinks(2, 3), 6, 6);
  check_prefill(AttentionPattern::with_sinks(3, 2), 2, 6);  // sinks beyond the prompt
}

TEST(Llama, PrefillWithTiledDecoding) {
  check_prefill(AttentionPattern::causal(), 4, 7, 2);
  check_prefill(AttentionPattern::sliding(4), 5, 6, 2);
}

// Top-k sampling: with k = 1 every draw is the greedy token; with k = 3 at a high temperature
// every token is among the 3 largest logits of the eager model run on the sequence so far (and
// not every one is the largest).
TEST(Llama, TopKSampling) {
  const int64_t P = 3, N = 12, B = 2;
  LlamaConfig c = LlamaConfig::tiny();
  c.tied_embeddings = false;
  LlamaWeights w = LlamaWeights::random(c, 5);
  HostTensor prompt = make_prompt(P, B, c.vocab, 4);
  const auto p = AttentionPattern::causal();
  Generated greedy = run_generate(c, w, prompt, N, p);
  Generated one = run_generate(c, w, prompt, N, p, {4.0, -1, 1}, 0, 3);
  EXPECT_TRUE(torch::equal(one.tokens, greedy.tokens)) << one.tokens << greedy.tokens;
  EXPECT_EQ(decode(c, w, prompt, P + N, {4.0, -1, 1}, 3), decode(c, w, prompt, P + N, {}));

  Generated hot = run_generate(c, w, prompt, N, p, {20.0, -1, 3}, 0, 1);
  torch::Tensor seq = torch::cat({to_torch(prompt).to(torch::kInt64), hot.tokens}, 0);
  torch::Tensor want = eager_logits(c, w, seq, p);
  int64_t not_largest = 0;
  for (int64_t k = 0; k < N; ++k) {
    torch::Tensor top = std::get<1>(want[P - 1 + k].topk(3));  // (B, 3)
    for (int64_t b = 0; b < B; ++b) {
      const int64_t id = hot.tokens[k][b].item<int64_t>();
      EXPECT_TRUE((top[b] == id).any().item<bool>()) << "step " << k << " sequence " << b
                                                      << ": " << id << " not in " << top[b];
      not_largest += id != top[b][0].item<int64_t>();
    }
  }
  EXPECT_GT(not_largest, 0);
  // Token by token too: every sampled token is among the top 3 of the step's logits.
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  RT logits;
  RT tokens = decode_tokens(ctx, c, w, prompt, t, l, p, {20.0, -1, 3}, &logits).retain();
  logits = logits.retain();
  Executable exe = compile(ctx, {{t.bound, P + N}, {l.bound, c.layers}});
  exe.run();
  for (int64_t k = P; k < P + N; ++k) {
    torch::Tensor top = std::get<1>(to_torch(exe.get(logits, {k - 1})).topk(3));
    torch::Tensor id = to_torch(exe.get(tokens, {k})).to(torch::kInt64);
    for (int64_t b = 0; b < B; ++b)
      EXPECT_TRUE((top[b] == id[b]).any().item<bool>()) << "step " << k;
  }
  EXPECT_THROW(decode(c, w, prompt, P + N, {0.0, -1, c.vocab + 1}), UserError);
  EXPECT_THROW(decode(c, w, prompt, P + N, {0.0, -1, -1}), UserError);
}

// The published Llama-3.2-1B shapes (dim 2048, 32 heads / 8 KV heads, head dim 64, MLP 8192,
// Llama 3 rotary scaling) with 2 of its 16 layers and the vocabulary cut to 4096 (the full
// 128256-entry embedding alone is 1 GiB, 2 with the transposed head): a prefill of 4 tokens and
// 4 decoding steps against the eager reference.
TEST(Llama, OneBShapedLogitsMatchEager) {
  LlamaConfig c = LlamaConfig::llama_3_2_1b();
  c.layers = 2;
  c.vocab = 4096;
  LlamaWeights w = LlamaWeights::random(c, 21);
  const int64_t P = 4, N = 4;
  HostTensor prompt = make_prompt(P, 1, c.vocab);
  for (const AttentionPattern& p : {AttentionPattern::causal(), AttentionPattern::sliding(3)}) {
    Generated g = run_generate(c, w, prompt, N, p);
    torch::Tensor seq = torch::cat({to_torch(prompt).to(torch::kInt64), g.tokens}, 0);
    torch::Tensor want = eager_logits(c, w, seq, p);
    for (int64_t k = 0; k <= N; ++k)
      expect_close(g.logits[k], want[P - 1 + k],
                   cat("1b-shaped, ", p.str(), ", position ", P - 1 + k), 1e-3);
  }
}

// Llama 3's scaling keeps short wavelengths, divides long ones by the factor and blends between.
TEST(Llama, RotaryFrequencyScaling) {
  LlamaConfig c = LlamaConfig::llama_3_2_1b();
  std::vector<double> f = rope_inverse_frequencies(c);
  ASSERT_EQ(f.size(), 32u);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  const double last = std::pow(c.rope_theta, -62.0 / 64.0);
  EXPECT_NEAR(f[31], last / 32.0, 1e-15);
  c.rope_factor = 0;
  EXPECT_NEAR(rope_inverse_frequencies(c)[31], last, 1e-15);
}

TEST(Llama, BadConfigAndPatternAreUserErrors) {
  LlamaConfig c = LlamaConfig::tiny();
  c.kv_heads = 3;
  EXPECT_THROW(c.validate(), UserError);
  EXPECT_THROW(AttentionPattern::parse("window"), UserError);
  EXPECT_THROW(AttentionPattern::parse("window:0"), UserError);
  EXPECT_EQ(AttentionPattern::parse("sinks:4:64").str(), "sinks:4:64");
}

std::string error_of(const std::function<void()>& f) { return testing::user_error_of(f); }

// A prompt or a sequence longer than the configured context, a window longer than the sequence.
TEST(Llama, LengthErrors) {
  LlamaConfig c = LlamaConfig::tiny();
  c.max_context = 16;
  const auto causal = AttentionPattern::causal();
  EXPECT_NO_THROW(check_lengths(c, causal, 4, 16));
  EXPECT_NO_THROW(check_lengths(c, AttentionPattern::sliding(16), 4, 16));
  std::string e = error_of([&] { check_lengths(c, causal, 17, 20); });
  EXPECT_NE(e.find("the prompt (17 tokens) is longer than the model's context of 16"),
            std::string::npos) << e;
  e = error_of([&] { check_lengths(c, causal, 4, 20); });
  EXPECT_NE(e.find("the prompt (4 tokens) and 16 generated tokens, 20 positions in all, exceed "
                   "the model's context of 16"),
            std::string::npos) << e;
  e = error_of([&] { check_lengths(c, AttentionPattern::sliding(12), 2, 10); });
  EXPECT_NE(e.find("window:12: the window is longer than the sequence (12 positions against 10"),
            std::string::npos) << e;
  e = error_of([&] { check_lengths(c, AttentionPattern::with_sinks(2, 8), 2, 9); });
  EXPECT_NE(e.find("the window with its sinks is longer than the sequence (10 positions against 9"),
            std::string::npos) << e;
  EXPECT_THROW(check_lengths(c, causal, 0, 4), UserError);
  EXPECT_THROW(check_lengths(c, causal, 5, 4), UserError);
  // The programs check the prompt against the context as they are built.
  const LlamaWeights w = LlamaWeights::random(c, 1);
  HostTensor prompt(DType::Int64, {17, 1});
  for (int64_t k = 0; k < 17; ++k) prompt.ptr<int64_t>()[k] = k;
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  e = error_of([&] { decode_tokens(ctx, c, w, prompt, t, l, causal); });
  EXPECT_NE(e.find("decode_tokens: the prompt (17 tokens) is longer than the model's context of 16"),
            std::string::npos) << e;
  e = error_of([&] { generate(ctx, c, w, prompt, t, l, causal); });
  EXPECT_NE(e.find("generate: the prompt (17 tokens) is longer"), std::string::npos) << e;
  c.max_context = 0;
  EXPECT_THROW(c.validate(), UserError);
}

}  // namespace
}  // namespace tempo::llm
