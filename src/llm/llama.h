// A Llama-3.2 decoder as a recurrent-tensor program (TEMPO §2.1, §7.2, §7.5): decoding steps are
// the temporal dimension t, layers the temporal dimension l (each layer's weights are read at l,
// so the SDG does not grow with depth), the batch is spatial. The K/V cache is the RTs k[t, l],
// v[t, l] themselves: attention at step t reads them through a dependence expression, so causal,
// sliding-window and attention-sink patterns differ only in that index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/tempo.h"

namespace tempo::llm {

struct LlamaConfig {
  int64_t vocab = 128256;
  int64_t dim = 2048;
  int64_t layers = 16;
  int64_t heads = 32;
  int64_t kv_heads = 8;  // grouped-query attention: heads / kv_heads query heads share a K/V head
  int64_t ffn_hidden = 8192;
  double norm_eps = 1e-5;
  double rope_theta = 500000.0;
  // Llama 3's rotary frequency scaling (rope_scaling in config.json); factor 0 turns it off.
  double rope_factor = 32.0, rope_low_freq_factor = 1.0, rope_high_freq_factor = 4.0;
  int64_t rope_original_context = 8192;
  bool tied_embeddings = true;  // the output head is the embedding matrix
  // The dtype the weights were published in (config.json's torch_dtype): float32, or float16 or
  // bfloat16, which `tempo generate` keeps its matmul weights in by default (exact, and half the
  // bytes per step).
  DType torch_dtype = DType::Float32;
  // The K/V cache's values: float32, or float16 or bfloat16, which halve the bytes attention
  // reads per step at long sequences (its sums stay float32; llama.cpp's default is float16).
  DType kv_dtype = DType::Float32;
  // The longest sequence (prompt and generated tokens) the model is configured for
  // (max_position_embeddings in config.json).
  int64_t max_context = 131072;

  int64_t head_dim() const { return dim / heads; }
  // The published shapes of Llama-3.2-1B and -3B, and a small model for tests.
  static LlamaConfig llama_3_2_1b();
  static LlamaConfig llama_3_2_3b();
  static LlamaConfig tiny();
  // Throws UserError naming the first inconsistent field (heads not dividing dim, ...).
  void validate() const;
};

// The rotary inverse frequencies (head_dim / 2 of them) with Llama 3's scaling.
std::vector<double> rope_inverse_frequencies(const LlamaConfig& c);

// Which cached steps the query at step t attends to.
struct AttentionPattern {
  enum class Kind { Causal, Window, Sinks };
  Kind kind = Kind::Causal;
  int64_t window = 0;  // Window, Sinks: the last `window` steps (t included)
  int64_t sinks = 0;   // Sinks: and the first `sinks` steps
  static AttentionPattern causal() { return {}; }
  static AttentionPattern sliding(int64_t w) { return {Kind::Window, w, 0}; }
  static AttentionPattern with_sinks(int64_t s, int64_t w) { return {Kind::Sinks, w, s}; }
  // "causal", "window:W", "sinks:S:W" (as `tempo generate --attention` takes them).
  static AttentionPattern parse(const std::string& text);
  // The reads of the K/V cache at step t (one slice, or the sinks and the window).
  std::vector<Expr> keys(const Dim& t) const;
  // Whether the query at position `query` attends to the key at position `key`.
  bool allows(int64_t query, int64_t key) const;
  std::string str() const;
};

// The weights, layer weights stacked along a leading layer axis, matmul weights in Hugging Face's
// orientation (out, in): x @ wᵀ applies them, and a checkpoint's tensors are copied as they are.
struct LlamaWeights {
  HostTensor embed;                      // (vocab, dim): float32, or a half checkpoint's type
  HostTensor attn_norm, ffn_norm;        // (layers, dim)
  HostTensor wq, wk, wv, wo;             // (layers, heads*hd, dim), (.., kv*hd, dim) x2, (.., dim, heads*hd)
  HostTensor w_gate, w_up, w_down;       // (layers, ffn, dim), (layers, ffn, dim), (layers, dim, ffn)
  HostTensor final_norm;                 // (dim)
  HostTensor head;                       // (vocab, dim); empty when tied to embed
  // Normal(0, 0.02) weights and unit norms from a seeded generator (no checkpoint needed).
  static LlamaWeights random(const LlamaConfig& c, uint64_t seed);
  // These weights with every matmul weight (wq .. w_down, the head, a tied head included) kept
  // as `dtype`: Float32, or Float16/BFloat16 to read half the bytes per decoding step (the sums
  // stay float32). Rounded to nearest; exact for weights that a half-type checkpoint held.
  LlamaWeights with_matmul_dtype(DType dtype) const&;
  LlamaWeights with_matmul_dtype(DType dtype) &&;  // converts these weights in place
  DType matmul_dtype() const { return wq.dtype; }
};

// Checks a decoding run's lengths before it is built: a prompt of `prompt` tokens and `total`
// positions in all (prompt included; decode_tokens' T, generate's P + T). UserError where the
// prompt or the sequence exceeds c.max_context (naming the numbers), or where the pattern's
// window (and sinks) is longer than the sequence: it would attend to every position, as causal
// does, which is most likely a mistake in the pattern or the length.
void check_lengths(const LlamaConfig& c, const AttentionPattern& pattern, int64_t prompt,
                   int64_t total);

// The functions below build a decoder whose program holds the weights `w` as its constants:
// pass std::move(weights) where the caller has no further use for them, and the program holds
// the only copy (an lvalue is copied).
//
// The logits of every decoding step: `tokens` is an int64 RT of shape (batch) over (t) (the
// token fed at step t), `t` and `l` are the context's step and layer dims (l's bound is the
// number of layers). Returns logits (batch, vocab) over (t).
RT decoder_logits(Context& ctx, const LlamaConfig& c, LlamaWeights w, const RT& tokens,
                  const Dim& t, const Dim& l, const AttentionPattern& pattern);

// How decode_tokens and generate pick each token after the prompt.
struct Sampling {
  double temperature = 0.0;  // 0: greedy (argmax); > 0: a draw from softmax(logits / temperature)
  int64_t eos = -1;          // >= 0: a sequence that emitted this token emits it from then on
  int64_t top_k = 0;         // > 0: the pick (greedy or drawn) among the top_k largest logits
};

// Decoding: the tokens of every step over (t), shape (batch). The prompt (P, batch) int64 is fed
// for steps 0..P-1 (token by token); from step P on, each token comes from the previous step's
// logits (the recurrence tokens[t + 1] = pick(logits[t])): the argmax, or with a temperature the
// Gumbel-max draw argmax(logits / temperature + g), g = -log(-log(u)) from the program's random
// stream (so a seed gives one sequence); with top_k, either among the top_k largest logits (the
// TopK op's values, the choice mapped back through its indices). A sequence that emitted `eos`
// repeats it: the batch is spatial and keeps running (a dynamic end per sequence costs no
// schedule change; its steps are computed and ignored). `logits` receives the logits RT if not
// null.
RT decode_tokens(Context& ctx, const LlamaConfig& c, LlamaWeights w, const HostTensor& prompt,
                 const Dim& t, const Dim& l, const AttentionPattern& pattern,
                 const Sampling& sampling = {}, RT* logits = nullptr);

// Generation with a batched prefill: the prompt (P, batch) runs through every layer in one pass
// per layer, its P positions a spatial axis (attention among them masked by the pattern), which
// gives the prompt's K/V, (P, batch, kv_heads, head_dim) over (l), and the logits at position
// P - 1. Then decoding step t (position P + t) runs the layers over (t, l) as decode_tokens
// does, attending to the prefill's K/V of the positions < P the pattern allows and to the
// decoding cache k[t', l] for the rest. The first token is picked from the prefill's logits.
struct Generation {
  RT tokens;          // int64 (batch) over (t): the token at position P + t, the input of step t
  RT logits;          // (batch, vocab) over (t): the logits at position P + t (pick tokens[t + 1])
  RT prefill_logits;  // (batch, vocab), no temporal dims: at position P - 1 (picks tokens[0])
};
Generation generate(Context& ctx, const LlamaConfig& c, LlamaWeights w, const HostTensor& prompt,
                    const Dim& t, const Dim& l, const AttentionPattern& pattern,
                    const Sampling& sampling = {});

}  // namespace tempo::llm
