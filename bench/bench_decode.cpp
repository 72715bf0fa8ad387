// Greedy decoding with a Llama-shaped decoder (llm/llama.h), Tempo against two eager LibTorch
// baselines written as a good engineer would, in one process with the same weights:
//   grown cache:  the K/V cache is concatenated one step longer each step (Torch's behaviour);
//   padded cache: the cache is preallocated to the final length, written in place, and every step
//                 attends over all of it with a mask (the static shapes of JAX).
// Per configuration (attention pattern, batch, sequence length): mean time between tokens (best
// of 2 runs, Tempo's one run at T >= 4096; Tempo's first run also makes the weights on the
// device, which its later runs reuse, as the eager decoders' weights are made before timing),
// peak bytes of LibTorch CPU memory in use during a run (Tempo's caching allocator counts every
// tensor of both systems), Tempo's tracked peak of its tensor stores, and whether the three
// token streams agree; the tracked peak against T. Then Tempo's tile-size sweep for causal
// attention (TEMPO Fig. 18), the batched prefill against feeding the prompt token by token, and
// compile time against the number of layers.
// Usage: bench_decode [--quick | --long | --traffic | --gpu | --gpu-dtypes | --gpu-agreement]
// (--long: window:512 and causal at batch 16 and at T = 2048 and 8192 only; --traffic: the D768
// model's time and memory traffic per token against the machine's memory bandwidth; --gpu: the
// Llama-3.2-1B shape with random weights, Tempo and the grown cache both on $TEMPO_DEVICE, causal
// and window:512, batch 1 and 16, T = 1024, 4096 and 16384 or the lengths that follow --gpu, the
// grown cache up to 4096 (where the tokens differ, for how many leading steps they agree);
// then Tempo with float32 and bfloat16 weights at the first length;
// --gpu-dtypes [T]: that last table alone, T = 512 by default; --gpu-agreement [T [LAYERS]]:
// where window:512's tokens at batch 16 part between Tempo and the eager decoders, and how near a
// tie each parting was)
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "backend/cpu_allocator.h"
#include "backend/libtorch_backend.h"
#include "driver/compile.h"
#include "llm/llama.h"


namespace {

using namespace tempo;
using llm::AttentionPattern;
using llm::LlamaConfig;
using llm::LlamaWeights;
using Clock = std::chrono::steady_clock;

// The device both systems run on: Tempo's default (TEMPO_DEVICE), which the eager baseline
// follows.
torch::Device device() {
  static const torch::Device d(backend::default_device());
  return d;
}

// Waits for the device's queued work, so that a timing covers it.
void synchronize() {
  if (device().is_cuda()) torch::cuda::synchronize();
}

torch::Tensor torch_of(const HostTensor& h) {
  return torch::from_blob(const_cast<uint8_t*>(h.data.data()), h.shape, torch::kFloat32)
      .to(device(), /*non_blocking=*/false, /*copy=*/true);
}

struct Run {
  double ms_per_token = 0;
  double peak_mib = 0;
  double tracked_mib = 0;  // Tempo: the tracked peak of its tensor stores (Executable::memory)
  torch::Tensor tokens;    // (T, B)
};

// The eager decoder: one step at a time over a per-layer K/V cache, grown or padded. With
// `gaps`, it also keeps each step's gap between the two largest logits of every sequence (T, B):
// how near a tie its greedy choice was.
Run eager(const LlamaConfig& c, const LlamaWeights& hw, const torch::Tensor& first, int64_t T,
          const AttentionPattern& p, bool padded, torch::Tensor* gaps = nullptr) {
  torch::NoGradGuard no_grad;
  const int64_t B = first.size(0), H = c.heads, Hk = c.kv_heads, G = H / Hk, hd = c.head_dim();
  // The matmul weights (layers, out, in) laid out (layers, in, out) once, so that x @ w[j] is
  // the GEMM's fastest form.
  auto in_out = [](const HostTensor& w) { return torch_of(w).transpose(1, 2).contiguous(); };
  torch::Tensor embed = torch_of(hw.embed), wq = in_out(hw.wq), wk = in_out(hw.wk),
                wv = in_out(hw.wv), wo = in_out(hw.wo), wg = in_out(hw.w_gate),
                wu = in_out(hw.w_up), wd = in_out(hw.w_down), an = torch_of(hw.attn_norm),
                fn = torch_of(hw.ffn_norm), final_norm = torch_of(hw.final_norm);
  torch::Tensor head = embed.t().contiguous();
  std::vector<double> inv = llm::rope_inverse_frequencies(c);
  torch::Tensor freqs = torch::tensor(std::vector<float>(inv.begin(), inv.end())).to(device());
  auto rms = [&](const torch::Tensor& x, const torch::Tensor& g) {
    return x * torch::rsqrt(x.pow(2).mean(-1, true) + c.norm_eps) * g;
  };
  backend::reset_cpu_peak();
  const int64_t before = backend::cpu_allocator_stats().in_use_bytes;
  auto t0 = Clock::now();
  std::vector<torch::Tensor> kc(c.layers), vc(c.layers);
  if (padded)
    for (int64_t j = 0; j < c.layers; ++j) {
      kc[j] = torch::zeros({B, Hk, T, hd}, device());
      vc[j] = torch::zeros({B, Hk, T, hd}, device());
    }
  torch::Tensor tok = first.to(device()), out = torch::empty({T, B}, torch::kInt64);
  if (gaps) *gaps = torch::empty({T, B}, device());
  for (int64_t s = 0; s < T; ++s) {
    out[s] = tok.cpu();
    torch::Tensor ang = freqs * static_cast<double>(s);
    torch::Tensor cos = torch::cat({ang.cos(), ang.cos()}),
                  sin = torch::cat({ang.sin(), ang.sin()});
    auto rot = [&](const torch::Tensor& x) {
      return x * cos + torch::cat({-x.slice(-1, hd / 2), x.slice(-1, 0, hd / 2)}, -1) * sin;
    };
    torch::Tensor x = embed.index_select(0, tok);
    for (int64_t j = 0; j < c.layers; ++j) {
      torch::Tensor a = rms(x, an[j]);
      torch::Tensor q = rot(a.matmul(wq[j]).view({B, H, hd})).view({B, Hk, G, hd});
      torch::Tensor k = rot(a.matmul(wk[j]).view({B, Hk, hd})).unsqueeze(2);  // (B, Hk, 1, hd)
      torch::Tensor v = a.matmul(wv[j]).view({B, Hk, hd}).unsqueeze(2);
      torch::Tensor K, V, mask;
      if (padded) {
        kc[j].select(2, s).copy_(k.squeeze(2));
        vc[j].select(2, s).copy_(v.squeeze(2));
        K = kc[j], V = vc[j];
        std::vector<float> m(static_cast<size_t>(T), -INFINITY);
        for (int64_t r = 0; r <= s; ++r) {
          bool in = p.kind == AttentionPattern::Kind::Causal || r > s - p.window ||
                    (p.kind == AttentionPattern::Kind::Sinks && r < p.sinks);
          if (in) m[static_cast<size_t>(r)] = 0.0f;
        }
        mask = torch::tensor(m).to(device());
      } else {
        kc[j] = s == 0 ? k : torch::cat({kc[j], k}, 2);
        vc[j] = s == 0 ? v : torch::cat({vc[j], v}, 2);
        if (p.kind == AttentionPattern::Kind::Window && kc[j].size(2) > p.window) {
          kc[j] = kc[j].slice(2, kc[j].size(2) - p.window);  // a window keeps its last w steps
          vc[j] = vc[j].slice(2, vc[j].size(2) - p.window);
        }
        K = kc[j], V = vc[j];
      }
      torch::Tensor sc = q.matmul(K.transpose(2, 3)) / std::sqrt(static_cast<double>(hd));
      if (mask.defined()) sc = sc + mask;
      torch::Tensor o = sc.softmax(-1).matmul(V).reshape({B, H * hd});
      torch::Tensor x2 = x + o.matmul(wo[j]);
      torch::Tensor f = rms(x2, fn[j]);
      torch::Tensor g = f.matmul(wg[j]);
      x = x2 + (g * g.sigmoid() * f.matmul(wu[j])).matmul(wd[j]);
    }
    torch::Tensor logits = rms(x, final_norm).matmul(head);
    tok = logits.argmax(-1);
    if (gaps) {
      torch::Tensor top = std::get<0>(logits.topk(2, -1));
      (*gaps)[s] = top.select(1, 0) - top.select(1, 1);
    }
  }
  synchronize();
  if (gaps) *gaps = gaps->cpu();
  Run r;
  r.ms_per_token = 1e3 * std::chrono::duration<double>(Clock::now() - t0).count() / T;
  r.peak_mib =
      static_cast<double>(backend::cpu_allocator_stats().peak_in_use_bytes - before) / (1 << 20);
  r.tokens = out;
  return r;
}

// With `profiled`, Tempo's decoding compiles once more with CompileOptions::profile and runs
// once: the executable is left there for its report and traffic.
Run tempo_decode(const LlamaConfig& c, const LlamaWeights& w, const torch::Tensor& first, int64_t T,
                 const AttentionPattern& p, int64_t tile,
                 std::optional<Executable>* profiled = nullptr) {
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  HostTensor prompt(DType::Int64, {1, first.size(0)});
  std::memcpy(prompt.data.data(), first.data_ptr<int64_t>(), prompt.data.size());
  RT tokens = llm::decode_tokens(ctx, c, w, prompt, t, l, p).retain();
  CompileOptions o;
  if (tile) o.passes.tiles = {{"t", tile}};
  Executable exe = compile(ctx, {{t.bound, T}, {l.bound, c.layers}}, o);
  Run best;
  for (int k = 0; k < (T >= 4096 ? 1 : 2); ++k) {  // one run of the longest, to fit the time
    backend::reset_cpu_peak();
    const int64_t before = backend::cpu_allocator_stats().in_use_bytes;
    auto t0 = Clock::now();
    exe.run();
    synchronize();
    double ms = 1e3 * std::chrono::duration<double>(Clock::now() - t0).count() / T;
    double peak =
        static_cast<double>(backend::cpu_allocator_stats().peak_in_use_bytes - before) / (1 << 20);
    if (k == 0 || ms < best.ms_per_token) best.ms_per_token = ms;
    best.peak_mib = peak;
    best.tracked_mib = static_cast<double>(exe.memory().peak_bytes) / (1 << 20);
  }
  best.tokens = torch::empty({T, first.size(0)}, torch::kInt64);
  for (int64_t s = 0; s < T; ++s) {
    HostTensor h = exe.get(tokens, {s});
    for (int64_t b = 0; b < first.size(0); ++b) best.tokens[s][b] = h.ptr<int64_t>()[b];
  }
  if (profiled) {
    o.profile = true;
    profiled->emplace(compile(ctx, {{t.bound, T}, {l.bound, c.layers}}, o));
    (*profiled)->run();
  }
  return best;
}

// STREAM-like kernels on arrays far larger than the caches, one thread, best of 5: the copy's
// bytes read plus written per second, and a sum's bytes read per second (the rate at which a
// decoding step can stream its weights), in GB/s.
std::pair<double, double> memory_bandwidth_gbs() {
  torch::Tensor a = torch::ones({int64_t{64} << 20}), b = torch::empty_like(a);  // 256 MiB each
  auto best_seconds = [](const std::function<void()>& f) {
    double best = 0;
    for (int k = 0; k < 5; ++k) {
      auto t0 = Clock::now();
      f();
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      best = k == 0 ? s : std::min(best, s);
    }
    return best;
  };
  const double bytes = static_cast<double>(a.nbytes());
  const double copy = 2 * bytes / best_seconds([&] { b.copy_(a); }) / 1e9;
  volatile float sink = 0;
  const double read = bytes / best_seconds([&] { sink = a.sum().item<float>(); }) / 1e9;
  return {copy, read};
}

// Decoding the D768 model (6 layers, 12 heads / 4 KV, FFN 2048, vocab 4096, untied head:
// 176 MB of F32 weights) at batch 1, 4 and 16, with the matmul weights as float32 and kept as
// float16: Tempo's and the (float32) grown cache's ms per token, against the floor of reading the
// weights once per token at the read bandwidth; Tempo's launches and bytes moved per token (its
// kernels' inputs and outputs), and where they go.
void traffic() {
  LlamaConfig c = LlamaConfig::tiny();
  c.vocab = 4096, c.dim = 768, c.layers = 6, c.heads = 12, c.kv_heads = 4, c.ffn_hidden = 2048;
  c.tied_embeddings = false;
  const LlamaWeights w32 = LlamaWeights::random(c, 1);
  auto weight_mb = [](const LlamaWeights& w) {
    double mb = 0;
    for (const HostTensor* h : {&w.embed, &w.attn_norm, &w.ffn_norm, &w.wq, &w.wk, &w.wv, &w.wo,
                                &w.w_gate, &w.w_up, &w.w_down, &w.final_norm, &w.head})
      mb += static_cast<double>(h->data.size()) / 1e6;
    return mb;
  };
  const auto [copy_gbs, read_gbs] = memory_bandwidth_gbs();
  const int64_t T = 128;
  std::printf("## Memory traffic per token, D768 model (%.1f MB of F32 weights), T = %lld, "
              "causal, 1 thread\n\nmemory bandwidth: copy %.2f GB/s, read %.2f GB/s\n\n"
              "| matmul weights | weights MB | batch | Tempo ms/token | grown cache (F32) ms/token "
              "| Tempo/grown | floor ms | Tempo/floor | Tempo launches/token | Tempo MB read + "
              "written per token | / weights |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
              weight_mb(w32), static_cast<long long>(T), copy_gbs, read_gbs);
  std::string report;
  for (DType dt : {DType::Float32, DType::Float16}) {
    const LlamaWeights w = w32.with_matmul_dtype(dt);
    const double mb_weights = weight_mb(w), floor_ms = mb_weights / read_gbs;  // MB/(GB/s) = ms
    for (int64_t B : {int64_t{1}, int64_t{4}, int64_t{16}}) {
      torch::manual_seed(0);
      torch::Tensor first = torch::randint(c.vocab, {B}, torch::kInt64);
      std::optional<Executable> profiled;
      const Run tp = tempo_decode(c, w, first, T, AttentionPattern::causal(), 0, &profiled);
      const Run grown = eager(c, w32, first, T, AttentionPattern::causal(), false);
      const Executable::Traffic tr = profiled->profile_traffic();
      const double mb = static_cast<double>(tr.in_bytes + tr.out_bytes) / 1e6 / T;
      std::printf("| %s | %.1f | %lld | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f | %.1f | %.2f |\n",
                  ir::dtype_name(dt), mb_weights, static_cast<long long>(B), tp.ms_per_token,
                  grown.ms_per_token, tp.ms_per_token / grown.ms_per_token, floor_ms,
                  tp.ms_per_token / floor_ms, static_cast<double>(tr.launches) / T, mb,
                  mb / mb_weights);
      std::fflush(stdout);
      if (B == 1 && dt == DType::Float16) report = profiled->profile_report(16);
    }
  }
  std::cout << "\nBatch 1, float16 weights, Tempo's profile (one run of " << T
            << " tokens, with timing):\n\n```\n" << report << "```\n";
}

// Best of 2 runs of a compiled program: ms and the peak MiB of LibTorch CPU memory in use.
std::pair<double, double> time_runs(Executable& exe) {
  double best = 0, peak = 0;
  for (int k = 0; k < 2; ++k) {
    backend::reset_cpu_peak();
    const int64_t before = backend::cpu_allocator_stats().in_use_bytes;
    auto t0 = Clock::now();
    exe.run();
    double ms = 1e3 * std::chrono::duration<double>(Clock::now() - t0).count();
    if (k == 0 || ms < best) best = ms;
    peak =
        static_cast<double>(backend::cpu_allocator_stats().peak_in_use_bytes - before) / (1 << 20);
  }
  return {best, peak};
}

// The time to the first generated token: the prompt in one batched prefill (llm::generate with
// one decoding step) against fed token by token (llm::decode_tokens over P + 1 steps); both
// compute the logits of positions P - 1 and P, and pick the token at position P.
void prefill_row(const LlamaConfig& c, const LlamaWeights& w, const AttentionPattern& p, int64_t B,
                 int64_t P) {
  torch::manual_seed(0);
  torch::Tensor ids = torch::randint(c.vocab, {P, B}, torch::kInt64);
  HostTensor prompt(DType::Int64, {P, B});
  std::memcpy(prompt.data.data(), ids.data_ptr<int64_t>(), prompt.data.size());
  Context a;
  Dim ta = a.dim("t", "T"), la = a.dim("l", "L");
  RT first = llm::generate(a, c, w, prompt, ta, la, p).tokens.retain();
  Executable batched = compile(a, {{ta.bound, 1}, {la.bound, c.layers}});
  auto [prefill_ms, prefill_peak] = time_runs(batched);
  Context b;
  Dim tb = b.dim("t", "T"), lb = b.dim("l", "L");
  RT fed = llm::decode_tokens(b, c, w, prompt, tb, lb, p).retain();
  Executable steps = compile(b, {{tb.bound, P + 1}, {lb.bound, c.layers}});
  auto [steps_ms, steps_peak] = time_runs(steps);
  HostTensor x = batched.get(first, {0}), y = steps.get(fed, {P});
  std::printf("| %s | %lld | %lld | %.1f | %.1f | %.1fx | %.1f / %.1f | %s |\n", p.str().c_str(),
              static_cast<long long>(B), static_cast<long long>(P), prefill_ms, steps_ms,
              steps_ms / prefill_ms, prefill_peak, steps_peak, x.data == y.data ? "yes" : "no");
  std::fflush(stdout);
}

// The first step at which sequence k of two token streams (T, B) differs; T where none does.
int64_t first_difference(const torch::Tensor& a, const torch::Tensor& b, int64_t k) {
  int64_t s = 0;
  while (s < a.size(0) && a[s][k].item<int64_t>() == b[s][k].item<int64_t>()) ++s;
  return s;
}

// How many leading greedy tokens (steps x batch) of every sequence `a` and `b` share.
int64_t leading_equal(const torch::Tensor& a, const torch::Tensor& b) {
  int64_t leading = a.size(0);
  for (int64_t k = 0; k < a.size(1); ++k) leading = std::min(leading, first_difference(a, b, k));
  return leading;
}

// Where window:512's greedy tokens at batch 16 part between Tempo and the two eager decoders
// (their attention sums in different orders), and whether each parting is a near-tie: the grown
// cache's gap between its two best logits at the step where a sequence first differs, ranked
// among that sequence's gaps at the steps before.
void gpu_agreement(const LlamaConfig& c, const LlamaWeights& w, int64_t T) {
  const int64_t B = 16;
  const AttentionPattern p = AttentionPattern::sliding(512);
  torch::manual_seed(0);
  torch::Tensor first = torch::randint(c.vocab, {B}, torch::kInt64);
  const Run tp = tempo_decode(c, w, first, T, p, 0);
  torch::Tensor gaps;
  const Run grown = eager(c, w, first, T, p, false, &gaps), padded = eager(c, w, first, T, p, true);
  std::printf("\n## Where %s's tokens part, batch %lld, T = %lld, on %s\n\n| streams | "
              "sequences that differ | first differing step |\n|---|---|---|\n",
              p.str().c_str(), static_cast<long long>(B), static_cast<long long>(T),
              device().str().c_str());
  const std::pair<const char*, std::pair<const Run*, const Run*>> pairs[] = {
      {"Tempo / grown cache", {&tp, &grown}},
      {"Tempo / padded cache", {&tp, &padded}},
      {"grown / padded cache", {&grown, &padded}}};
  for (const auto& [name, runs] : pairs) {
    int64_t differ = 0, earliest = T;
    for (int64_t k = 0; k < B; ++k) {
      const int64_t s = first_difference(runs.first->tokens, runs.second->tokens, k);
      differ += s < T;
      earliest = std::min(earliest, s);
    }
    std::printf("| %s | %lld of %lld | %s |\n", name, static_cast<long long>(differ),
                static_cast<long long>(B),
                earliest < T ? std::to_string(earliest).c_str() : "-");
  }
  if (leading_equal(tp.tokens, grown.tokens) == T) return;
  std::printf("\n| sequence (Tempo / grown) | first differing step | logit gap there | its rank "
              "among the gaps before (1 = smallest) | median gap before |\n"
              "|---|---|---|---|---|\n");
  for (int64_t k = 0; k < B; ++k) {
    const int64_t s = first_difference(tp.tokens, grown.tokens, k);
    if (s == T) continue;
    torch::Tensor before = gaps.slice(0, 0, s).select(1, k);
    const float gap = gaps[s][k].item<float>();
    const int64_t rank = 1 + (before < gap).sum().item<int64_t>();
    std::printf("| %lld | %lld | %.3g | %lld of %lld | %.3g |\n", static_cast<long long>(k),
                static_cast<long long>(s), gap, static_cast<long long>(rank),
                static_cast<long long>(s + 1),
                s ? before.median().item<float>() : 0.0f);
  }
  std::fflush(stdout);
}

// Tempo's causal decoding on the device with the matmul weights and the embedding as float32 and
// as bfloat16 (on a GPU through backend/skinny_matmul_cuda.cpp's kernel): ms per token, tracked
// memory, and how many leading greedy tokens of every sequence equal float32's.
void gpu_weight_dtypes(const LlamaConfig& c, const LlamaWeights& w32, int64_t T) {
  std::printf("\n## Weights as float32 and as bfloat16, causal, T = %lld, on %s\n\n"
              "| batch | f32 ms/token | bf16 ms/token | bf16/f32 | f32 tracked MiB | "
              "bf16 tracked MiB | leading tokens equal (min over batch) |\n"
              "|---|---|---|---|---|---|---|\n",
              static_cast<long long>(T), device().str().c_str());
  const LlamaWeights w16 = w32.with_matmul_dtype(DType::BFloat16);
  for (int64_t B : {int64_t{1}, int64_t{16}}) {
    torch::manual_seed(0);
    torch::Tensor first = torch::randint(c.vocab, {B}, torch::kInt64);
    const Run f = tempo_decode(c, w32, first, T, AttentionPattern::causal(), 0);
    const Run h = tempo_decode(c, w16, first, T, AttentionPattern::causal(), 0);
    const int64_t leading = leading_equal(f.tokens, h.tokens);
    std::printf("| %lld | %.2f | %.2f | %.2f | %.1f | %.1f | %lld |\n",
                static_cast<long long>(B), f.ms_per_token, h.ms_per_token,
                h.ms_per_token / f.ms_per_token, f.tracked_mib, h.tracked_mib,
                static_cast<long long>(leading));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  setenv("TEMPO_NO_SCHEDULE_CACHE", "1", 1);  // compile times include scheduling
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const bool long_run = argc > 1 && std::strcmp(argv[1], "--long") == 0;
  const bool gpu = argc > 1 && std::strcmp(argv[1], "--gpu") == 0;
  backend::set_num_threads(1);
  backend::install_caching_cpu_allocator();
  if (argc > 1 && std::strcmp(argv[1], "--traffic") == 0) {
    traffic();
    return 0;
  }
  const bool gpu_dtypes = argc > 1 && std::strcmp(argv[1], "--gpu-dtypes") == 0;
  const bool gpu_agree = argc > 1 && std::strcmp(argv[1], "--gpu-agreement") == 0;
  if (gpu || gpu_dtypes || gpu_agree) {  // the shape of TEMPO's decoding figures, on the device
    LlamaConfig g = LlamaConfig::llama_3_2_1b();
    if (gpu_agree && argc > 3) g.layers = std::stoll(argv[3]);  // fewer layers: a quicker check
    const LlamaWeights gw = LlamaWeights::random(g, 1);
    std::vector<int64_t> lengths;
    for (int k = 2; k < argc; ++k) lengths.push_back(std::stoll(argv[k]));
    if (gpu_dtypes || gpu_agree) {
      (gpu_dtypes ? gpu_weight_dtypes : gpu_agreement)(g, gw,
                                                      lengths.empty() ? 512 : lengths.front());
      return 0;
    }
    if (lengths.empty()) lengths = {1024, 4096, 16384};
    std::cout << "## Greedy decoding, Llama-3.2-1B shape (random weights) on " << device()
              << "\n\n| attention | batch | T | Tempo ms/token | grown cache ms/token | "
                 "Tempo/grown | Tempo tracked MiB | tokens agree |\n"
                 "|---|---|---|---|---|---|---|---|\n";
    for (const AttentionPattern& p : {AttentionPattern::sliding(512), AttentionPattern::causal()})
      for (int64_t B : {int64_t{1}, int64_t{16}})
        for (int64_t T : lengths) {
          torch::manual_seed(0);
          torch::Tensor first = torch::randint(g.vocab, {B}, torch::kInt64);
          const Run tp = tempo_decode(g, gw, first, T, p, 0);
          if (T > 4096) {  // the grown cache's time grows with T: Tempo alone
            std::printf("| %s | %lld | %lld | %.2f | - | - | %.1f | - |\n", p.str().c_str(),
                        static_cast<long long>(B), static_cast<long long>(T), tp.ms_per_token,
                        tp.tracked_mib);
          } else {
            const Run grown = eager(g, gw, first, T, p, false);
            const int64_t leading = leading_equal(tp.tokens, grown.tokens);
            const std::string agree = leading == T ? "yes"
                                                   : "the first " + std::to_string(leading) +
                                                         " steps (min over batch)";
            std::printf("| %s | %lld | %lld | %.2f | %.2f | %.2f | %.1f | %s |\n",
                        p.str().c_str(), static_cast<long long>(B), static_cast<long long>(T),
                        tp.ms_per_token, grown.ms_per_token,
                        tp.ms_per_token / grown.ms_per_token, tp.tracked_mib, agree.c_str());
          }
          std::fflush(stdout);
        }
    gpu_weight_dtypes(g, gw, lengths.front());
    return 0;
  }
  LlamaConfig c = LlamaConfig::tiny();
  c.vocab = 2048, c.dim = 256, c.layers = 4, c.heads = 8, c.kv_heads = 4, c.ffn_hidden = 768;
  c.rope_original_context = 8192;
  LlamaWeights w = LlamaWeights::random(c, 1);
  std::cout << "## Greedy decoding, Llama-shaped (dim " << c.dim << ", " << c.layers << " layers, "
            << c.heads << " heads / " << c.kv_heads << " KV, vocab " << c.vocab << "), 1 thread"
            << (quick      ? ", --quick"
                : long_run ? ", --long"
                           : "")
            << "\n\n"
            << "| attention | batch | T | Tempo ms/token | grown cache ms/token | padded cache "
               "ms/token | Tempo/grown | Tempo/padded | peak MiB Tempo / grown / padded | Tempo "
               "tracked MiB | tokens agree |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
  // Batch 1 reaches the longest sequence; batch 4 stops earlier to keep the run's time.
  const std::vector<int64_t> lengths =
      quick ? std::vector<int64_t>{128, 512} : std::vector<int64_t>{256, 1024, 4096};
  const int64_t longest_batched = quick ? 512 : 1024;
  // One row: Tempo and both eager decoders on the same first tokens; Tempo's tracked MiB.
  auto row = [&](const AttentionPattern& p, int64_t B, int64_t T) {
    torch::manual_seed(0);
    torch::Tensor first = torch::randint(c.vocab, {B}, torch::kInt64);
    Run tp = tempo_decode(c, w, first, T, p, 0);
    Run grown = eager(c, w, first, T, p, false), padded = eager(c, w, first, T, p, true);
    bool agree = torch::equal(tp.tokens, grown.tokens) && torch::equal(tp.tokens, padded.tokens);
    std::printf(
        "| %s | %lld | %lld | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f / %.1f / %.1f | %.2f | %s "
        "|\n",
        p.str().c_str(), static_cast<long long>(B), static_cast<long long>(T), tp.ms_per_token,
        grown.ms_per_token, padded.ms_per_token, tp.ms_per_token / grown.ms_per_token,
        tp.ms_per_token / padded.ms_per_token, tp.peak_mib, grown.peak_mib, padded.peak_mib,
        tp.tracked_mib, agree ? "yes" : "no");
    std::fflush(stdout);
    return tp.tracked_mib;
  };
  if (long_run) {  // the long sequences and large batch, with the window of 512 steps
    for (const AttentionPattern& p : {AttentionPattern::sliding(512), AttentionPattern::causal()}) {
      row(p, 16, 1024);
      row(p, 1, 2048);
      row(p, 1, 8192);
    }
    return 0;
  }
  std::vector<std::pair<std::string, std::vector<double>>> tracked;  // per pattern, batch 1
  for (const AttentionPattern& p : {AttentionPattern::causal(), AttentionPattern::sliding(64)}) {
    tracked.emplace_back(p.str(), std::vector<double>{});
    for (int64_t B : {int64_t{1}, int64_t{4}})
      for (int64_t T : lengths) {
        if (B > 1 && T > longest_batched) continue;
        const double mib = row(p, B, T);
        if (B == 1) tracked.back().second.push_back(mib);
      }
  }
  // The stores' tracked peak against T (the K/V cache of 4 layers is 4 KiB per step at batch
  // 1): the window keeps its last 64 steps, causal attention every step.
  std::cout
      << "\n## Tempo's tracked peak of device memory (MiB, batch 1) against T\n\n| attention |";
  for (int64_t T : lengths) std::cout << " T = " << T << " |";
  std::cout << "\n|---|";
  for (size_t k = 0; k < lengths.size(); ++k) std::cout << "---|";
  std::cout << "\n";
  for (const auto& [name, peaks] : tracked) {
    std::cout << "| " << name << " |";
    for (double mib : peaks) std::printf(" %.2f |", mib);
    std::cout << "\n";
  }
  std::cout << std::flush;

  // Tile-size sweep (TEMPO Fig. 18): the causal window k[0:t+1] read in tiles of the given
  // size; no tiling stacks the whole window each step.
  const int64_t sweep_T = quick ? 512 : 1024;
  std::cout << "\n## Causal attention tile size (batch 1, T = " << sweep_T << ")\n\n"
            << "| tile | ms/token | peak MiB | tokens agree with untiled |\n|---|---|---|---|\n";
  {
    torch::manual_seed(0);
    torch::Tensor first = torch::randint(c.vocab, {1}, torch::kInt64);
    Run untiled;
    for (int64_t tile :
         quick ? std::vector<int64_t>{0, 64, 256} : std::vector<int64_t>{0, 64, 256, 512}) {
      Run r = tempo_decode(c, w, first, sweep_T, AttentionPattern::causal(), tile);
      if (tile == 0) untiled = r;
      std::printf("| %s | %.2f | %.1f | %s |\n", tile ? std::to_string(tile).c_str() : "none",
                  r.ms_per_token, r.peak_mib,
                  torch::equal(r.tokens, untiled.tokens) ? "yes" : "no");
      std::fflush(stdout);
    }
  }

  // Batched prefill against feeding the prompt token by token (time to the first token).
  std::cout << "\n## Prompt processing: batched prefill vs token by token (ms to the first "
               "generated token)\n\n"
            << "| attention | batch | prompt | prefill ms | token-by-token ms | speedup | peak MiB "
               "prefill / token-by-token | first token agrees |\n"
               "|---|---|---|---|---|---|---|---|\n";
  for (const AttentionPattern& p : {AttentionPattern::causal(), AttentionPattern::sliding(64)})
    for (int64_t B : {int64_t{1}, int64_t{4}})
      for (int64_t P : quick ? std::vector<int64_t>{128} : std::vector<int64_t>{128, 512, 1024})
        if (P < 1024 || B == 1) prefill_row(c, w, p, B, P);

  // Compile time against depth (TEMPO Fig. 24): layers are a temporal dimension, so the SDG and
  // its schedule do not grow with them.
  std::cout << "\n## Compile time against the number of layers (causal, T = 256)\n\n"
            << "| layers | SDG ops | compile s |\n|---|---|---|\n";
  for (int64_t L : quick ? std::vector<int64_t>{2, 8, 28} : std::vector<int64_t>{2, 4, 8, 16, 28}) {
    LlamaConfig d = c;
    d.layers = L;
    LlamaWeights wd = LlamaWeights::random(d, 1);
    Context ctx;
    Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
    HostTensor prompt(DType::Int64, {1, 1});
    llm::decode_tokens(ctx, d, wd, prompt, t, l, AttentionPattern::causal()).retain();
    auto t0 = Clock::now();
    Executable exe = compile(ctx, {{t.bound, 256}, {l.bound, L}});
    std::printf("| %lld | %zu | %.2f |\n", static_cast<long long>(L), ctx.graph().num_ops(),
                std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 0;
}
