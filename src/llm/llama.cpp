#include "llm/llama.h"

#include <cmath>
#include <random>
#include <sstream>
#include <tuple>
#include <utility>

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
  positive("max_context", max_context);
  if (dim % heads != 0 || head_dim() % 2 != 0)
    throw UserError(cat("LlamaConfig: dim ", dim, " must be heads (", heads,
                        ") times an even head dimension"));
  if (heads % kv_heads != 0)
    throw UserError(cat("LlamaConfig: kv_heads ", kv_heads, " must divide heads ", heads));
  if (kv_dtype != DType::Float32 && !ir::is_half(kv_dtype))
    throw UserError(cat("LlamaConfig: kv_dtype must be float32, float16 or bfloat16, got ",
                        ir::dtype_name(kv_dtype)));
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
  w.wq = randn({L, c.heads * hd, D});
  w.wk = randn({L, c.kv_heads * hd, D});
  w.wv = randn({L, c.kv_heads * hd, D});
  w.wo = randn({L, D, c.heads * hd});
  w.w_gate = randn({L, c.ffn_hidden, D});
  w.w_up = randn({L, c.ffn_hidden, D});
  w.w_down = randn({L, D, c.ffn_hidden});
  w.final_norm = ones({D});
  if (!c.tied_embeddings) w.head = randn({c.vocab, D});
  return w;
}

LlamaWeights LlamaWeights::with_matmul_dtype(DType dtype) const& {
  LlamaWeights w = *this;
  return std::move(w).with_matmul_dtype(dtype);
}

LlamaWeights LlamaWeights::with_matmul_dtype(DType dtype) && {
  if (dtype != DType::Float32 && !ir::is_half(dtype))
    throw UserError(cat("matmul weights can be kept as f32, f16 or bf16, not ",
                        ir::dtype_name(dtype)));
  for (HostTensor* m : {&wq, &wk, &wv, &wo, &w_gate, &w_up, &w_down, &head})
    if (!m->shape.empty() && m->dtype != dtype) *m = m->to(dtype);
  return std::move(*this);
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

// cos and sin of the rotation at float positions of shape (..., 1) (or ()): (..., hd) each.
std::pair<RT, RT> rotation(const RT& positions, const RT& inv_freq) {
  RT angles = positions * inv_freq;
  RT half_cos = angles.cos(), half_sin = angles.sin();
  return {cat({half_cos, half_cos}, -1), cat({half_sin, half_sin}, -1)};
}

// The weights as constants of the program (layer weights read at l), made once so that the
// prefill and the decoding steps share them.
struct Model {
  const LlamaConfig* c = nullptr;
  RT embed, head, final_norm, inv_freq;
  RT attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;

  // x @ wᵀ for a matmul weight of this model, kept (out, in) as LlamaWeights holds it: each
  // output's weights are contiguous for the kernel that streams them at decoding
  // (backend/skinny_matmul.h); LibTorch's GEMM reads them transposed in place.
  static RT linear(const RT& x, const RT& w) { return x.matmul(w.transpose(-1, -2)); }
  // The embedding's rows of `tokens`, as float32 (a half-type table, a half checkpoint's, is
  // widened row by row).
  RT embedding(const RT& tokens) const {
    RT rows = embed.index_select(0, tokens);
    return rows.dtype() == DType::Float32 ? rows : rows.cast(DType::Float32);
  }
};

// The weights move into the program's constants: the program holds the only copy.
Model constants(Context& ctx, const LlamaConfig& c, LlamaWeights w, const Dim& l) {
  c.validate();
  Model m;
  m.c = &c;
  auto layer = [&](HostTensor& stacked) { return ctx.tensor(std::move(stacked)).index(0, l.var); };
  std::vector<float> inv;
  for (double f : rope_inverse_frequencies(c)) inv.push_back(static_cast<float>(f));
  // The tied head is the embedding, (vocab, dim) its (out, in): the same tensor where the
  // embedding has the matmul weights' type, else a copy in that type.
  const bool tied_copy = c.tied_embeddings && w.embed.dtype != w.matmul_dtype();
  HostTensor head_copy = tied_copy ? w.embed.to(w.matmul_dtype()) : HostTensor{};
  m.embed = ctx.tensor(std::move(w.embed));
  if (!c.tied_embeddings) m.head = ctx.tensor(std::move(w.head));
  else if (!tied_copy) m.head = m.embed;
  else m.head = ctx.tensor(std::move(head_copy));
  m.final_norm = ctx.tensor(std::move(w.final_norm));
  m.inv_freq = ctx.tensor(HostTensor::from(inv, {c.head_dim() / 2}));
  m.attn_norm = layer(w.attn_norm), m.ffn_norm = layer(w.ffn_norm);
  m.wq = layer(w.wq), m.wk = layer(w.wk), m.wv = layer(w.wv), m.wo = layer(w.wo);
  m.w_gate = layer(w.w_gate), m.w_up = layer(w.w_up), m.w_down = layer(w.w_down);
  return m;
}

// The residual stream after the attention output, through the SwiGLU MLP.
RT feed_forward(const Model& m, const RT& x2) {
  RT f = rms_norm(x2, m.ffn_norm, m.c->norm_eps);
  RT gate = m.linear(f, m.w_gate);
  return x2 + m.linear(gate * gate.sigmoid() * m.linear(f, m.w_up), m.w_down);
}

RT output_logits(const Model& m, const RT& last) {
  return m.linear(rms_norm(last, m.final_norm, m.c->norm_eps), m.head);
}

// Keys or values as the cache keeps them (LlamaConfig::kv_dtype).
RT cached(const LlamaConfig& c, const RT& x) {
  return c.kv_dtype == DType::Float32 ? x : x.cast(c.kv_dtype);
}

// The prompt's K/V of every layer (P positions) and the logits at its last position.
struct Prefill {
  int64_t length = 0;  // P
  RT k, v;             // (P, batch, kv_heads, head_dim) over (l)
  RT logits;           // (batch, vocab), no temporal dims
};

// The whole prompt in one pass per layer: the positions are a spatial axis and the attention
// among them is masked by the pattern (TEMPO's padded formulation, done once).
Prefill prefill(Context& ctx, const Model& m, const HostTensor& prompt, const Dim& l,
                const AttentionPattern& pattern) {
  const LlamaConfig& c = *m.c;
  const int64_t P = prompt.shape[0], B = prompt.shape[1], D = c.dim, H = c.heads,
                Hk = c.kv_heads, G = H / Hk, hd = c.head_dim();
  HostTensor mask(DType::Float32, {P, P});
  for (int64_t q = 0; q < P; ++q)
    for (int64_t k = 0; k < P; ++k)
      mask.ptr<float>()[q * P + k] = pattern.allows(q, k) ? 0.0f : -INFINITY;
  auto [cos, sin] = rotation(ctx.arange(P, DType::Float32).unsqueeze(-1), m.inv_freq);
  cos = cos.reshape({P, 1, 1, hd}), sin = sin.reshape({P, 1, 1, hd});

  RT h = ctx.placeholder(TensorType{DType::Float32, {P, B, D}}, {l}, "h_prefill");
  RT x = h[l.var];
  RT a = rms_norm(x, m.attn_norm, c.norm_eps);
  RT q = rotate(m.linear(a, m.wq).reshape({P, B, H, hd}), cos, sin, hd);
  Prefill out;
  out.length = P;
  out.k = cached(c, rotate(m.linear(a, m.wk).reshape({P, B, Hk, hd}), cos, sin, hd))
              .named("k_prefill");
  out.v = cached(c, m.linear(a, m.wv).reshape({P, B, Hk, hd})).named("v_prefill");
  // Queries (B, Hk, G * P, hd) against keys (B, Hk, hd, P): one matmul per layer.
  RT qg = q.reshape({P, B, Hk, G, hd}).permute({1, 2, 3, 0, 4}).reshape({B, Hk, G * P, hd});
  RT scores = (qg.matmul(out.k.permute({1, 2, 3, 0})) *
               (1.0 / std::sqrt(static_cast<double>(hd)))).reshape({B, Hk, G, P, P}) +
              ctx.tensor(mask);
  RT attended = scores.softmax(-1)
                    .reshape({B, Hk, G * P, P})
                    .matmul(out.v.permute({1, 2, 0, 3}))
                    .reshape({B, Hk, G, P, hd})
                    .permute({3, 0, 1, 2, 4})
                    .reshape({P, B, H * hd});
  RT result = feed_forward(m, x + m.linear(attended, m.wo));

  HostTensor flat = prompt;
  flat.shape = {P * B};
  h[Expr(0)] = m.embedding(ctx.tensor(flat)).reshape({P, B, D});
  h[l.var + 1] = result;
  out.logits = output_logits(m, result[l.bound - 1].index(0, P - 1));
  return out;
}

// A part of the cache a decoding step attends to: positions [start, stop) of the prefill's K/V,
// or steps [start, stop) of the decoding cache k[t, l] (step t holds position P + t).
struct KeyPiece {
  bool prefill;
  Expr start, stop;
};

// The pattern's keys at step t (position P + t) split at the end of the prompt (P = 0: no
// prefill). Pieces of the prefill may be empty at some steps (a window that has moved past it).
std::vector<KeyPiece> key_pieces(const AttentionPattern& p, const Dim& t, int64_t P) {
  const Expr s1 = t.var + 1;
  const int64_t w = p.window - 1;  // the window's steps before t
  std::vector<KeyPiece> out;
  switch (p.kind) {
    case AttentionPattern::Kind::Causal:
      if (P > 0) out.push_back({true, Expr(0), Expr(P)});
      out.push_back({false, Expr(0), s1});
      break;
    case AttentionPattern::Kind::Window:
      if (P > 0 && w > 0) {  // positions max(0, P + t - w) .. P - 1
        Expr first = P > w ? t.var + (P - w) : max(0, t.var - (w - P));
        out.push_back({true, min(P, first), Expr(P)});
      }
      out.push_back({false, max(0, t.var - w), s1});
      break;
    case AttentionPattern::Kind::Sinks: {
      const int64_t s = p.sinks;
      if (P > 0) out.push_back({true, Expr(0), Expr(std::min(s, P))});
      if (s > P) out.push_back({false, Expr(0), min(s - P, s1)});
      if (s < P && w > 0) out.push_back({true, min(P, max(s, t.var + (P - w))), Expr(P)});
      out.push_back({false, max(std::max<int64_t>(s - P, 0), t.var - w), s1});
      break;
    }
  }
  return out;
}

// The logits of every decoding step over (t): the layers over (t, l), each step's K/V cached as
// the RTs k[t, l], v[t, l] and read with the prefill's through the pattern's pieces.
RT decode_logits(Context& ctx, const Model& m, const RT& tokens, const Dim& t, const Dim& l,
                 const AttentionPattern& pattern, const Prefill* pre) {
  const LlamaConfig& c = *m.c;
  const int64_t D = c.dim, H = c.heads, Hk = c.kv_heads, G = H / Hk, hd = c.head_dim();
  const int64_t P = pre ? pre->length : 0;
  const Expr B = tokens.shape()[0];
  // Positions: the rotation of step t, shared by every layer.
  auto [cos, sin] = rotation(ctx.symbol(t.var + P).cast(DType::Float32), m.inv_freq);

  // h[t, l]: the input of layer l at step t.
  RT h = ctx.placeholder(TensorType{DType::Float32, {B, D}}, {t, l}, "h");
  RT x = h[at(h, t, t.var, l, l.var)];
  RT a = rms_norm(x, m.attn_norm, c.norm_eps);
  RT q = rotate(m.linear(a, m.wq).reshape({B, H, hd}), cos, sin, hd);
  RT k = cached(c, rotate(m.linear(a, m.wk).reshape({B, Hk, hd}), cos, sin, hd)).named("k_cache");
  RT v = cached(c, m.linear(a, m.wv).reshape({B, Hk, hd})).named("v_cache");
  // The keys and values this step attends to: (n, B, Hk, hd) per piece.
  std::vector<RT> ks, vs;
  for (const KeyPiece& piece : key_pieces(pattern, t, P)) {
    if (piece.prefill) {
      const bool whole = piece.start.is_const(0) && piece.stop.is_const(P);
      ks.push_back(whole ? pre->k : pre->k.slice(0, piece.start, piece.stop));
      vs.push_back(whole ? pre->v : pre->v.slice(0, piece.start, piece.stop));
    } else {
      ks.push_back(k[at(k, t, slice(piece.start, piece.stop), l, l.var)]);
      vs.push_back(v[at(v, t, slice(piece.start, piece.stop), l, l.var)]);
    }
  }
  RT qg = q.reshape({B, Hk, G, hd});
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  RT attended;
  if (ks.size() == 1) {
    RT scores = qg.matmul(ks[0].permute({1, 2, 3, 0})) * scale;
    attended = scores.softmax(-1).matmul(vs[0].permute({1, 2, 0, 3}));
  } else {
    // One softmax over the scores of all pieces; the K/V pieces are read in place (no copy of
    // the cache into one tensor), only the scores are concatenated.
    std::vector<RT> scores;
    for (const RT& kp : ks) scores.push_back(qg.matmul(kp.permute({1, 2, 3, 0})));
    RT probs = (cat(scores, -1) * scale).softmax(-1);
    Expr offset(0);
    for (size_t i = 0; i < ks.size(); ++i) {
      const Expr n = ks[i].shape()[0];
      RT part = probs.slice(-1, offset, offset + n).matmul(vs[i].permute({1, 2, 0, 3}));
      attended = i == 0 ? part : attended + part;
      offset = offset + n;
    }
  }
  RT out = feed_forward(m, x + m.linear(attended.reshape({B, H * hd}), m.wo));

  h[at(h, t, t.var, l, Expr(0))] = m.embedding(tokens);
  h[at(h, t, t.var, l, l.var + 1)] = out;
  return output_logits(m, out[at(out, t, t.var, l, l.bound - 1)]);
}

void check_decoding(const LlamaConfig& c, const HostTensor& prompt, const Sampling& s,
                    const char* who) {
  c.validate();
  if (prompt.dtype != DType::Int64 || prompt.shape.size() != 2 || prompt.shape[0] < 1 ||
      prompt.shape[1] < 1)
    throw UserError(cat(who, ": the prompt must be int64 of shape (length >= 1, batch >= 1)"));
  if (prompt.shape[0] > c.max_context)
    throw UserError(cat(who, ": the prompt (", prompt.shape[0],
                        " tokens) is longer than the model's context of ", c.max_context,
                        " positions (max_context)"));
  if (!(s.temperature >= 0) || !std::isfinite(s.temperature))
    throw UserError(cat(who, ": the temperature must be >= 0, got ", s.temperature));
  if (s.top_k < 0 || s.top_k > c.vocab)
    throw UserError(cat(who, ": top_k must be in [0, ", c.vocab, "], got ", s.top_k));
  if (s.eos >= c.vocab)
    throw UserError(cat(who, ": eos ", s.eos, " is outside the vocabulary of ", c.vocab));
  for (int64_t k = 0; k < prompt.numel(); ++k)
    if (prompt.ptr<int64_t>()[k] < 0 || prompt.ptr<int64_t>()[k] >= c.vocab)
      throw UserError(cat(who, ": prompt token ", prompt.ptr<int64_t>()[k],
                          " is outside the vocabulary of ", c.vocab));
}

// The token picked from logits (B, vocab) over `domain`: the argmax, or with a temperature the
// Gumbel-max draw argmax(logits / temperature + g), g = -log(-log(u)); with top_k, both among
// the k largest logits only, mapped back to vocabulary ids through their indices.
RT pick(Context& ctx, const LlamaConfig& c, const Sampling& s, const RT& logits,
        const Dims& domain) {
  RT scores = logits, ids;
  if (s.top_k > 0) std::tie(scores, ids) = logits.topk(s.top_k);
  if (s.temperature > 0) {
    const Expr B = logits.shape()[0];
    RT u = ctx.rand_uniform({B, s.top_k > 0 ? s.top_k : c.vocab}, domain) * (1.0 - 1e-7) +
           1e-7;  // in (0, 1)
    scores = scores / s.temperature - (-u.log()).log();
  }
  RT choice = scores.argmax(-1);
  if (s.top_k > 0) choice = ids.gather(-1, choice.unsqueeze(-1)).squeeze(-1);
  return choice;
}

}  // namespace

void check_lengths(const LlamaConfig& c, const AttentionPattern& pattern, int64_t prompt,
                   int64_t total) {
  if (prompt < 1 || total < prompt)
    throw UserError(cat("decoding: expected 1 <= prompt length <= total length, got a prompt of ",
                        prompt, " tokens and ", total, " positions"));
  if (prompt > c.max_context)
    throw UserError(cat("the prompt (", prompt, " tokens) is longer than the model's context of ",
                        c.max_context, " positions (max_context)"));
  if (total > c.max_context)
    throw UserError(cat("the prompt (", prompt, " tokens) and ", total - prompt,
                        " generated tokens, ", total, " positions in all, exceed the model's context of ",
                        c.max_context, " positions (max_context)"));
  const int64_t span = pattern.window + pattern.sinks;
  if (pattern.kind != AttentionPattern::Kind::Causal && span > total)
    throw UserError(cat("attention ", pattern.str(), ": the window",
                        pattern.sinks ? " with its sinks" : "", " is longer than the sequence (",
                        span, " positions against ", total, ", prompt and generated tokens); use "
                        "causal attention or a shorter window"));
}

bool AttentionPattern::allows(int64_t query, int64_t key) const {
  if (key > query || key < 0) return false;
  switch (kind) {
    case Kind::Causal:
      return true;
    case Kind::Window:
      return key > query - window;
    case Kind::Sinks:
      return key < sinks || key > query - window;
  }
  return false;
}

RT decoder_logits(Context& ctx, const LlamaConfig& c, LlamaWeights w, const RT& tokens,
                  const Dim& t, const Dim& l, const AttentionPattern& pattern) {
  return decode_logits(ctx, constants(ctx, c, std::move(w), l), tokens, t, l, pattern, nullptr);
}

RT decode_tokens(Context& ctx, const LlamaConfig& c, LlamaWeights w, const HostTensor& prompt,
                 const Dim& t, const Dim& l, const AttentionPattern& pattern,
                 const Sampling& sampling, RT* logits) {
  check_decoding(c, prompt, sampling, "decode_tokens");
  const int64_t P = prompt.shape[0], B = prompt.shape[1];
  RT tokens = ctx.placeholder(TensorType{DType::Int64, {B}}, {t}, "tokens");
  RT out = decoder_logits(ctx, c, std::move(w), tokens[t.var], t, l, pattern);
  if (logits) *logits = out;
  RT next = pick(ctx, c, sampling, out, {t});
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

Generation generate(Context& ctx, const LlamaConfig& c, LlamaWeights w, const HostTensor& prompt,
                    const Dim& t, const Dim& l, const AttentionPattern& pattern,
                    const Sampling& sampling) {
  check_decoding(c, prompt, sampling, "generate");
  const int64_t P = prompt.shape[0], B = prompt.shape[1];
  Model m = constants(ctx, c, std::move(w), l);
  Prefill pre = prefill(ctx, m, prompt, l, pattern);
  Generation g;
  g.prefill_logits = pre.logits;
  RT tokens = ctx.placeholder(TensorType{DType::Int64, {B}}, {t}, "tokens");
  g.logits = decode_logits(ctx, m, tokens[t.var], t, l, pattern, &pre);
  RT first = pick(ctx, c, sampling, pre.logits, {});
  RT next = pick(ctx, c, sampling, g.logits, {t});
  if (sampling.eos >= 0) {  // as in decode_tokens: a prompt ending in eos keeps emitting it
    RT eos = ctx.constant(static_cast<double>(sampling.eos), {}, DType::Int64);
    first = where(ctx.tensor(prompt).index(0, Expr(P - 1)) == eos, eos, first);
    next = where(tokens[t.var] == eos, eos, next);
  }
  tokens[Expr(0)] = first;
  tokens[t.var + 1] = next;
  g.tokens = tokens;
  return g;
}

}  // namespace tempo::llm
