#include "llm/llama.h"

#include <cmath>
#include <random>
#include <sstream>

#include "util/error.h"

namespace tempo::llm {

LlamaConfig LlamaConfig::llama_3_2_1b() {
  LlamaConfig c;
  c.dim = 2048, c.layers = 16, c.heads = 32, c.kv_heads = 8, c.ffn_hidden = 8192;
  return c;
}

LlamaConfig LlamaConfig::llama_3_2_3b() {
  LlamaConfig c;
  c.dim = 3072, c.layers = 28, c.heads = 24, c.kv_heads = 8, c.ffn_hidden = 8192;
  return c;
}

LlamaConfig LlamaConfig::tiny() {
  LlamaConfig c;
  c.vocab = 96, c.dim = 32, c.layers = 2, c.heads = 4, c.kv_heads = 2, c.ffn_hidden = 64;
  c.rope_original_context = 16;  // so that the scaling changes some frequencies at this size
  return c;
}

void LlamaConfig::validate() const {
  auto positive = [](const char* what, int64_t v) {
    if (v < 1) throw UserError(cat("LlamaConfig: ", what, " must be at least 1, got ", v));
  };
  positive("vocab", vocab);
  positive("dim", dim);
  positive("layers", layers);
  positive("heads", heads);
  positive("kv_heads", kv_heads);
  positive("ffn_hidden", ffn_hidden);
  if (dim % heads != 0 || head_dim() % 2 != 0)
    throw UserError(cat("LlamaConfig: dim ", dim, " must be heads (", heads,
                        ") times an even head dimension"));
  if (heads % kv_heads != 0)
    throw UserError(cat("LlamaConfig: kv_heads ", kv_heads, " must divide heads ", heads));
}

std::vector<double> rope_inverse_frequencies(const LlamaConfig& c) {
  const int64_t half = c.head_dim() / 2;
  std::vector<double> inv(static_cast<size_t>(half));
  const double pi = std::acos(-1.0);
  const double low_wavelen = c.rope_original_context / c.rope_low_freq_factor;
  const double high_wavelen = c.rope_original_context / c.rope_high_freq_factor;
  for (int64_t i = 0; i < half; ++i) {
    double f = std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / c.head_dim());
    if (c.rope_factor > 0) {
      const double wavelen = 2 * pi / f;
      if (wavelen > low_wavelen) {
        f /= c.rope_factor;  // long wavelengths: scaled down fully
      } else if (wavelen >= high_wavelen) {
        const double smooth = (c.rope_original_context / wavelen - c.rope_low_freq_factor) /
                              (c.rope_high_freq_factor - c.rope_low_freq_factor);
        f = (1 - smooth) * f / c.rope_factor + smooth * f;
      }
    }
    inv[static_cast<size_t>(i)] = f;
  }
  return inv;
}

AttentionPattern AttentionPattern::parse(const std::string& text) {
  std::vector<int64_t> n;
  std::stringstream in(text);
  std::string kind, part;
  std::getline(in, kind, ':');
  while (std::getline(in, part, ':')) {
    char* end = nullptr;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end || v < 1)
      throw UserError(cat("attention '", text, "': '", part, "' is not a positive integer"));
    n.push_back(v);
  }
  if (kind == "causal" && n.empty()) return causal();
  if (kind == "window" && n.size() == 1) return sliding(n[0]);
  if (kind == "sinks" && n.size() == 2) return with_sinks(n[0], n[1]);
  throw UserError(cat("attention '", text, "': expected causal, window:W or sinks:S:W"));
}

std::vector<Expr> AttentionPattern::keys(const Dim& t) const {
  switch (kind) {
    case Kind::Causal:
      return {slice(0, t.var + 1)};
    case Kind::Window:
      return {slice(max(0, t.var - (window - 1)), t.var + 1)};
    case Kind::Sinks:  // the first `sinks` steps, then the window after them
      return {slice(0, min(sinks, t.var + 1)),
              slice(max(sinks, t.var - (window - 1)), t.var + 1)};
  }
  return {};
}

std::string AttentionPattern::str() const {
  switch (kind) {
    case Kind::Causal:
      return "causal";
    case Kind::Window:
      return cat("window:", window);
    case Kind::Sinks:
      return cat("sinks:", sinks, ":", window);
  }
  return "";
}

LlamaWeights LlamaWeights::random(const LlamaConfig& c, uint64_t seed) {
  c.validate();
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  auto randn = [&](std::vector<int64_t> shape) {
    HostTensor h(DType::Float32, std::move(shape));
    for (int64_t k = 0; k < h.numel(); ++k) h.ptr<float>()[k] = normal(gen);
    return h;
  };
  auto ones = [](std::vector<int64_t> shape) {
    HostTensor h(DType::Float32, std::move(shape));
    for (int64_t k = 0; k < h.numel(); ++k) h.ptr<float>()[k] = 1.0f;
    return h;
  };
  const int64_t L = c.layers, D = c.dim, hd = c.head_dim();
  LlamaWeights w;
  w.embed = randn({c.vocab, D});
  w.attn_norm = ones({L, D});
  w.ffn_norm = ones({L, D});
  w.wq = randn({L, D, c.heads * hd});
  w.wk = randn({L, D, c.kv_heads * hd});
  w.wv = randn({L, D, c.kv_heads * hd});
  w.wo = randn({L, c.heads * hd, D});
  w.w_gate = randn({L, D, c.ffn_hidden});
  w.w_up = randn({L, D, c.ffn_hidden});
  w.w_down = randn({L, c.ffn_hidden, D});
  w.final_norm = ones({D});
  if (!c.tied_embeddings) w.head = randn({D, c.vocab});
  return w;
}

namespace {

RT rms_norm(const RT& x, const RT& weight, double eps) {
  return x / ((x * x).mean({-1}, true) + eps).sqrt() * weight;
}

// The index of an RT over the step and layer dims, in its domain's order (the program works with
// either order; with l before t, the K/V cache's steps are its last dimension, which block and
// window stores keep as views).
Expr at(const RT& x, const Dim& t, const Expr& step, const Dim& l, const Expr& layer) {
  std::vector<Expr> entries;
  for (const Dim& d : x.domain()) entries.push_back(d == t ? step : d == l ? layer : d.var);
  return seq(entries);
}

// Rotary embedding in Hugging Face's layout: the halves of each head are the pairs rotated.
RT rotate(const RT& x, const RT& cos, const RT& sin, int64_t hd) {
  RT lo = x.slice(-1, 0, hd / 2), hi = x.slice(-1, hd / 2, hd);
  return x * cos + cat({-hi, lo}, -1) * sin;
}

// A (rows, cols) float matrix transposed: the tied output head, laid out (dim, vocab) once so
// that every step's head matmul reads it contiguously.
HostTensor transposed(const HostTensor& m) {
  const int64_t rows = m.shape[0], cols = m.shape[1];
  HostTensor out(DType::Float32, {cols, rows});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) out.ptr<float>()[k * rows + r] = m.ptr<float>()[r * cols + k];
  return out;
}

}  // namespace

RT decoder_logits(Context& ctx, const LlamaConfig& c, const LlamaWeights& w, const RT& tokens,
                  const Dim& t, const Dim& l, const AttentionPattern& pattern) {
  c.validate();
  const int64_t D = c.dim, H = c.heads, Hk = c.kv_heads, G = H / Hk, hd = c.head_dim();
  const Expr B = tokens.shape()[0];
  auto layer = [&](const HostTensor& stacked) { return ctx.tensor(stacked).index(0, l.var); };

  // Positions: the rotation of step t, shared by every layer.
  std::vector<float> inv;
  for (double f : rope_inverse_frequencies(c)) inv.push_back(static_cast<float>(f));
  RT angles = ctx.symbol(t.var).cast(DType::Float32) *
              ctx.tensor(HostTensor::from(inv, {hd / 2}));
  RT half_cos = angles.cos(), half_sin = angles.sin();
  RT cos = cat({half_cos, half_cos}, -1), sin = cat({half_sin, half_sin}, -1);

  // h[t, l]: the input of layer l at step t.
  RT h = ctx.placeholder(TensorType{DType::Float32, {B, D}}, {t, l}, "h");
  RT x = h[at(h, t, t.var, l, l.var)];
  RT a = rms_norm(x, layer(w.attn_norm), c.norm_eps);
  RT q = rotate(a.matmul(layer(w.wq)).reshape({B, H, hd}), cos, sin, hd);
  RT k = rotate(a.matmul(layer(w.wk)).reshape({B, Hk, hd}), cos, sin, hd).named("k_cache");
  RT v = a.matmul(layer(w.wv)).reshape({B, Hk, hd}).named("v_cache");
  // The cache of this layer over the steps the pattern attends to: (n, B, Hk, hd) each.
  std::vector<RT> ks, vs;
  for (const Expr& steps : pattern.keys(t)) {
    ks.push_back(k[at(k, t, steps, l, l.var)]);
    vs.push_back(v[at(v, t, steps, l, l.var)]);
  }
  RT K = ks.size() == 1 ? ks[0] : cat(ks, 0), V = vs.size() == 1 ? vs[0] : cat(vs, 0);
  RT qg = q.reshape({B, Hk, G, hd});
  RT scores = qg.matmul(K.permute({1, 2, 3, 0})) * (1.0 / std::sqrt(static_cast<double>(hd)));
  RT attended = scores.softmax(-1).matmul(V.permute({1, 2, 0, 3})).reshape({B, H * hd});
  RT x2 = x + attended.matmul(layer(w.wo));
  RT f = rms_norm(x2, layer(w.ffn_norm), c.norm_eps);
  RT gate = f.matmul(layer(w.w_gate));
  RT out = x2 + (gate * gate.sigmoid() * f.matmul(layer(w.w_up))).matmul(layer(w.w_down));

  RT embedded = ctx.tensor(w.embed).index_select(0, tokens);
  h[at(h, t, t.var, l, Expr(0))] = embedded;
  h[at(h, t, t.var, l, l.var + 1)] = out;
  RT last = out[at(out, t, t.var, l, l.bound - 1)];
  RT head = ctx.tensor(c.tied_embeddings ? transposed(w.embed) : w.head);
  return rms_norm(last, ctx.tensor(w.final_norm), c.norm_eps).matmul(head);
}

RT decode_tokens(Context& ctx, const LlamaConfig& c, const LlamaWeights& w, const HostTensor& prompt,
                 const Dim& t, const Dim& l, const AttentionPattern& pattern,
                 const Sampling& sampling, RT* logits) {
  if (prompt.dtype != DType::Int64 || prompt.shape.size() != 2 || prompt.shape[0] < 1)
    throw UserError("decode_tokens: the prompt must be int64 of shape (length >= 1, batch)");
  if (!(sampling.temperature >= 0) || !std::isfinite(sampling.temperature))
    throw UserError(cat("decode_tokens: the temperature must be >= 0, got ", sampling.temperature));
  if (sampling.eos >= c.vocab)
    throw UserError(cat("decode_tokens: eos ", sampling.eos, " is outside the vocabulary of ", c.vocab));
  const int64_t P = prompt.shape[0], B = prompt.shape[1];
  for (int64_t k = 0; k < prompt.numel(); ++k)
    if (prompt.ptr<int64_t>()[k] < 0 || prompt.ptr<int64_t>()[k] >= c.vocab)
      throw UserError(cat("decode_tokens: prompt token ", prompt.ptr<int64_t>()[k],
                          " is outside the vocabulary of ", c.vocab));
  RT tokens = ctx.placeholder(TensorType{DType::Int64, {B}}, {t}, "tokens");
  RT out = decoder_logits(ctx, c, w, tokens[t.var], t, l, pattern);
  if (logits) *logits = out;
  RT scores = out;
  if (sampling.temperature > 0) {
    RT u = ctx.rand_uniform({B, c.vocab}, {t}) * (1.0 - 1e-7) + 1e-7;  // in (0, 1)
    scores = out / sampling.temperature - (-u.log()).log();
  }
  RT next = scores.argmax(-1);
  if (sampling.eos >= 0) {
    RT eos = ctx.constant(static_cast<double>(sampling.eos), {}, DType::Int64);
    next = where(tokens[t.var] == eos, eos, next);
  }
  RT given = ctx.tensor(prompt);
  tokens[Expr(0)] = given.index(0, Expr(0));
  tokens[t.var + 1] = where(ctx.symbol(t.var + 1) < ctx.constant(static_cast<double>(P), {}, DType::Int64),
                            given.index(0, min(t.var + 1, P - 1)), next);
  return tokens;
}

}  // namespace tempo::llm
