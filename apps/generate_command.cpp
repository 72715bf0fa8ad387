// `tempo generate`: decoding with the Llama decoder of src/llm, random weights or a Hugging Face
// checkpoint, prompts as token ids or as text through a tokenizer.json.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "commands.h"
#include "driver/compile.h"
#include "parse_args.h"
#include "llm/checkpoint.h"
#include "llm/llama.h"
#include "llm/tokenizer.h"
#include "rewrite/program_rewrites.h"
#include "util/error.h"

namespace {

using namespace tempo;

const char* kUsage =
    "usage: tempo generate [options]\n"
    "Decoding with a Llama-3.2 decoder (random weights or a checkpoint): steps and layers are\n"
    "temporal dimensions, the K/V cache is read through the attention pattern's index.\n\n"
    "  --config C        tiny (default), 1b or 3b (Llama-3.2 shapes, random weights)\n"
    "  --checkpoint DIR  a Hugging Face Llama checkpoint: DIR/config.json and model.safetensors\n"
    "                    (or shards listed in model.safetensors.index.json); not with --config\n"
    "  --tokenizer FILE  a byte-level BPE tokenizer.json (default DIR/tokenizer.json if present);\n"
    "                    with one, the tokens are printed as text\n"
    "  --layers N        use the first N layers only\n"
    "  --prompt TEXT     the prompt as text, encoded by the tokenizer (with the special tokens\n"
    "                    its post-processor adds, such as beginning-of-text)\n"
    "  --prompt-tokens L comma-separated token ids fed first (default: the tokenizer's\n"
    "                    beginning-of-text token, else 1)\n"
    "  --tokens N        positions in all, prompt included (default 32): N - P tokens are\n"
    "                    generated after a prompt of P\n"
    "  --batch B         sequences decoded together, each fed the same prompt (default 1)\n"
    "  --weights-dtype D the matmul weights kept as f32, f16 or bf16: the half types read half\n"
    "                    the bytes per step and sum in f32 (default: the checkpoint's torch_dtype\n"
    "                    where it is f16 or bf16, else f32)\n"
    "  --kv-dtype D      the K/V cache kept as f32 (default), f16 or bf16: attention reads\n"
    "                    half the bytes per step (its sums stay f32)\n"
    "  --attention A     causal (default), window:W or sinks:S:W\n"
    "  --tile Z          run attention over the cache in tiles of Z steps\n"
    "  --temperature X   sample from softmax(logits / X) instead of the argmax (default 0)\n"
    "  --top-k K         pick among the K largest logits only (greedy or sampled)\n"
    "  --eos ID          a sequence that emits ID repeats it from then on\n"
    "  --seed S          weight and sampling seed (default 0)\n"
    "  --token-by-token-prompt  feed the prompt one decoding step per token instead of the\n"
    "                    batched prefill (one pass per layer over all its positions); greedy\n"
    "                    decoding gives the same tokens either way, sampling draws from\n"
    "                    different random streams\n"
    "  --rewrites R      graph rewrites of the optimized program: none (default), search\n"
    "                    (TASO's search under costs measured here), learned (RLFlow's PPO\n"
    "                    agent), learned:FILE (one saved by `tempo rewrite train`) or\n"
    "                    world-model (RLFlow's model-based agent)\n"
    "  --verbose         print each compile stage's time (and the rewrites' choices)\n"
    "  --profile         time every launch and print where the run's time went, per op\n"
    "  --memory-budget SIZE  keep tracked device memory under SIZE (e.g. 64MiB), or fail\n"
    "                    naming what does not fit (a K/V cache that every step reads whole\n"
    "                    is not swapped)\n"
    "  --memory-timeline FILE  write the stores' device bytes after every executed statement\n"
    "                    to FILE (CSV) and a plot next to it (.svg)\n"
    "  --save-checkpoint DIR  also write the model as a Hugging Face checkpoint to DIR\n";

int64_t positive(const std::string& flag, const std::string& s) {
  int64_t v = cli::parse_int(flag, s);
  if (v < 1) throw UserError(cat(flag, " expects a positive integer, got '", s, "'"));
  return v;
}

ir::DType parse_dtype(const std::string& flag, const std::string& s) {
  if (s == "f32") return ir::DType::Float32;
  if (s == "f16") return ir::DType::Float16;
  if (s == "bf16") return ir::DType::BFloat16;
  throw UserError(cat(flag, " expects f32, f16 or bf16, got '", s, "'"));
}

// What the command line sets.
struct Args {
  std::string config = "tiny", prompt_tokens, prompt_string, attention = "causal";
  std::string checkpoint, tokenizer_path, save_dir, timeline, rewrites = "none";
  std::optional<ir::DType> weights_dtype;
  ir::DType kv_dtype = ir::DType::Float32;
  bool has_config = false, has_prompt = false, has_prompt_tokens = false, stepwise = false;
  bool profile = false, verbose = false;
  int64_t layers = 0, tokens = 32, batch = 1, tile = 0, seed = 0, memory_budget = 0;
  llm::Sampling sampling;
};

// Empty with --help (the usage printed).
std::optional<Args> parse_command_line(int argc, char** argv) {
  Args r;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return std::nullopt;
    }
    if (a == "--token-by-token-prompt") {
      r.stepwise = true;
      continue;
    }
    if (a == "--profile" || a == "--verbose") {
      (a == "--profile" ? r.profile : r.verbose) = true;
      continue;
    }
    if (k + 1 >= argc) throw UserError(cat("unknown option or missing value: ", a, " (try `tempo generate --help`)"));
    std::string v = argv[++k];
    if (a == "--config") r.config = v, r.has_config = true;
    else if (a == "--checkpoint") r.checkpoint = v;
    else if (a == "--tokenizer") r.tokenizer_path = v;
    else if (a == "--save-checkpoint") r.save_dir = v;
    else if (a == "--layers") r.layers = positive(a, v);
    else if (a == "--prompt") r.prompt_string = v, r.has_prompt = true;
    else if (a == "--prompt-tokens") r.prompt_tokens = v, r.has_prompt_tokens = true;
    else if (a == "--tokens") r.tokens = positive(a, v);
    else if (a == "--batch") r.batch = positive(a, v);
    else if (a == "--attention") r.attention = v;
    else if (a == "--weights-dtype") r.weights_dtype = parse_dtype(a, v);
    else if (a == "--kv-dtype") r.kv_dtype = parse_dtype(a, v);
    else if (a == "--tile") r.tile = positive(a, v);
    else if (a == "--seed") r.seed = cli::parse_int(a, v);
    else if (a == "--temperature") r.sampling.temperature = cli::parse_double(a, v);
    else if (a == "--eos") r.sampling.eos = cli::parse_int(a, v);
    else if (a == "--top-k") r.sampling.top_k = positive(a, v);
    else if (a == "--memory-timeline") r.timeline = v;
    else if (a == "--rewrites") r.rewrites = v;
    else if (a == "--memory-budget") r.memory_budget = parse_bytes(v, a);
    else throw UserError(cat("unknown option ", a, " (try `tempo generate --help`)"));
  }
  if (r.has_config && !r.checkpoint.empty())
    throw UserError("--config and --checkpoint exclude each other: the checkpoint's config.json gives the shape");
  if (r.has_prompt && r.has_prompt_tokens) throw UserError("--prompt and --prompt-tokens exclude each other");
  return r;
}

// The model's shape: the checkpoint's or a named configuration's, cut to --layers.
llm::LlamaConfig model_config(const Args& a) {
  llm::LlamaConfig c = !a.checkpoint.empty() ? llm::read_llama_config(a.checkpoint)
                       : a.config == "tiny"  ? llm::LlamaConfig::tiny()
                       : a.config == "1b"    ? llm::LlamaConfig::llama_3_2_1b()
                       : a.config == "3b"    ? llm::LlamaConfig::llama_3_2_3b()
                                             : throw UserError(cat("--config: expected tiny, 1b or 3b, got '", a.config, "'"));
  const std::string model_name = a.checkpoint.empty() ? a.config : std::string("checkpoint's");
  if (a.layers) {
    if (a.layers > c.layers) throw UserError(cat("--layers ", a.layers, ": the ", model_name, " model has ", c.layers));
    c.layers = a.layers;
  }
  c.kv_dtype = a.kv_dtype;
  return c;
}

// The prompt's token ids, from --prompt through the tokenizer or from --prompt-tokens (default:
// the beginning-of-text token); `flag` is set to the option they came from.
std::vector<int64_t> prompt_ids(const Args& a, const std::optional<llm::Tokenizer>& tokenizer,
                                const llm::LlamaConfig& c, std::string& flag) {
  std::vector<int64_t> prompt;
  flag = "--prompt-tokens";
  if (a.has_prompt) {
    flag = "--prompt";
    if (!tokenizer)
      throw UserError("--prompt needs a tokenizer: give --tokenizer FILE, or a --checkpoint directory with a tokenizer.json");
    prompt = tokenizer->encode(a.prompt_string);
    if (prompt.empty()) throw UserError("--prompt: the text encodes to no tokens");
    for (int64_t id : prompt)
      if (id >= c.vocab)
        throw UserError(cat("--prompt: the tokenizer's token ", id, " is not below the model's vocabulary size ", c.vocab));
    return prompt;
  }
  std::string ids = a.prompt_tokens;
  if (!a.has_prompt_tokens) ids = tokenizer && tokenizer->bos() >= 0 ? cat(tokenizer->bos()) : "1";
  std::stringstream in(ids);
  for (std::string id; std::getline(in, id, ',');) {
    char* end = nullptr;
    long long v = std::strtoll(id.c_str(), &end, 10);
    if (id.empty() || *end || v < 0 || v >= c.vocab)
      throw UserError(cat("--prompt-tokens: '", id, "' is not a token id below the vocabulary size ", c.vocab));
    prompt.push_back(v);
  }
  return prompt;
}

// A tokenizer with ids the model does not have cannot feed it: checked before anything compiles.
void check_vocab(const llm::Tokenizer& tokenizer, const Args& a, const llm::LlamaConfig& c) {
  if (tokenizer.vocab_size() <= c.vocab) return;
  const std::string model =
      a.checkpoint.empty()
          ? cat("--config ", a.config)
          : (std::filesystem::path(a.checkpoint) / "config.json").string();
  throw UserError(cat("the tokenizer ", a.tokenizer_path, " has ", tokenizer.vocab_size(),
                      " token ids but the model (", model, ") a vocabulary of ", c.vocab,
                      ": they do not belong together"));
}

// Each sequence's tokens, as text with a tokenizer (prompt included); all decoded before any is
// printed, so that an id the tokenizer lacks leaves no half-printed line.
void print_sequences(const Executable& exe, const RT& out, const Args& a,
                     const std::vector<int64_t>& prompt,
                     const std::optional<llm::Tokenizer>& tokenizer) {
  const int64_t generated = a.tokens - static_cast<int64_t>(prompt.size());
  std::ostringstream text;
  for (int64_t b = 0; b < a.batch; ++b) {
    std::vector<int64_t> ids;
    if (a.stepwise) {
      for (int64_t s = 0; s < a.tokens; ++s) ids.push_back(exe.get(out, {s}).ptr<int64_t>()[b]);
    } else {
      ids = prompt;
      for (int64_t s = 0; s < generated; ++s) ids.push_back(exe.get(out, {s}).ptr<int64_t>()[b]);
    }
    text << "sequence " << b << ":";
    if (tokenizer) {
      text << " " << tokenizer->decode(ids);
    } else {
      for (int64_t id : ids) text << " " << id;
    }
    text << "\n";
  }
  std::cout << text.str();
}

}  // namespace

int run_generate_command(int argc, char** argv) {
  std::optional<Args> parsed = parse_command_line(argc, argv);
  if (!parsed) return 0;
  Args& a = *parsed;
  const llm::LlamaConfig c = model_config(a);
  if (a.tokenizer_path.empty() && !a.checkpoint.empty() &&
      std::filesystem::exists(std::filesystem::path(a.checkpoint) / "tokenizer.json"))
    a.tokenizer_path = (std::filesystem::path(a.checkpoint) / "tokenizer.json").string();
  std::optional<llm::Tokenizer> tokenizer;
  if (!a.tokenizer_path.empty()) {
    tokenizer = llm::Tokenizer::load(a.tokenizer_path);
    check_vocab(*tokenizer, a, c);
  }
  const llm::AttentionPattern pattern = llm::AttentionPattern::parse(a.attention);
  std::string prompt_flag;
  const std::vector<int64_t> prompt = prompt_ids(a, tokenizer, c, prompt_flag);
  const int64_t P = static_cast<int64_t>(prompt.size()), tokens = a.tokens, batch = a.batch;
  if (P > tokens)
    throw UserError(cat(prompt_flag, ": the prompt (", P, " tokens) is longer than --tokens ", tokens));
  llm::check_lengths(c, pattern, P, tokens);
  HostTensor p(DType::Int64, {P, batch});
  for (int64_t s = 0; s < P; ++s)
    for (int64_t b = 0; b < batch; ++b) p.ptr<int64_t>()[s * batch + b] = prompt[s];

  llm::LlamaWeights w = a.checkpoint.empty() ? llm::LlamaWeights::random(c, static_cast<uint64_t>(a.seed))
                                             : llm::load_llama_weights(a.checkpoint, c);
  if (!a.save_dir.empty()) llm::save_llama_checkpoint(a.save_dir, c, w);
  const DType weights_dtype = a.weights_dtype.value_or(
      ir::is_half(c.torch_dtype) ? c.torch_dtype : DType::Float32);
  if (weights_dtype != w.matmul_dtype()) w = std::move(w).with_matmul_dtype(weights_dtype);
  using Clock = std::chrono::steady_clock;
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  // Token by token, step t feeds position t (T = N); with the prefill, step t generates the
  // token at position P + t (T = N - P, at least one step to compile).
  const int64_t steps = a.stepwise ? tokens : std::max<int64_t>(1, tokens - P);
  RT out;
  // When each generated token is available (the prefill's end for the first): a sink that reads
  // the token, run by the schedule as soon as the token exists.
  std::vector<Clock::time_point> ready(static_cast<size_t>(steps));
  if (a.stepwise) {
    out = llm::decode_tokens(ctx, c, std::move(w), p, t, l, pattern, a.sampling).retain();
  } else {
    out = llm::generate(ctx, c, std::move(w), p, t, l, pattern, a.sampling).tokens.retain();
    auto stamp = [&ready](const std::vector<HostTensor>&, const std::vector<int64_t>& at) {
      ready[static_cast<size_t>(at[0])] = Clock::now();
      return std::vector<HostTensor>{};
    };
    ctx.udf("token_clock", stamp, {out[t.var]}, {}, {t});
  }
  CompileOptions o;
  o.seed = static_cast<uint64_t>(a.seed);
  o.memory_timeline = a.timeline;
  o.memory_budget = a.memory_budget;
  o.profile = a.profile;
  o.verbose = a.verbose;
  rewrite::set_rewrites(o, a.rewrites, "--rewrites");
  if (a.tile) o.passes.tiles = {{"t", a.tile}};
  auto t0 = Clock::now();
  Executable exe = compile(ctx, {{t.bound, steps}, {l.bound, c.layers}}, o);
  auto t1 = Clock::now();
  exe.run();
  auto t2 = Clock::now();
  print_sequences(exe, out, a, prompt, tokenizer);
  auto ms = [](Clock::time_point from, Clock::time_point to) {
    return 1e3 * std::chrono::duration<double>(to - from).count();
  };
  std::cout << "compile " << ms(t0, t1) / 1e3 << " s, ";
  if (a.stepwise) {
    std::cout << ms(t1, t2) / static_cast<double>(tokens) << " ms between tokens";
  } else {
    // The run's last step computes the logits after the last token too: `steps` steps follow
    // the prefill's first token.
    std::cout << "prefill of " << P << " tokens " << ms(t1, ready[0]) << " ms, "
              << ms(ready[0], t2) / static_cast<double>(steps) << " ms between tokens";
  }
  std::cout << " (" << c.layers << " layers, " << pattern.str() << ", "
            << ir::dtype_name(weights_dtype) << " matmul weights, " << ir::dtype_name(c.kv_dtype)
            << " K/V cache)\n";
  if (a.profile) std::cout << exe.profile_report(24);
  if (!a.timeline.empty())
    std::cout << "memory timeline: " << a.timeline << " (peak " << exe.memory().peak_bytes
              << " bytes of tracked device memory)\n";
  return 0;
}
