// `tempo generate`: greedy decoding with the Llama decoder of src/llm (random weights).
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "commands.h"
#include "parse_args.h"
#include "llm/llama.h"
#include "util/error.h"

namespace {

using namespace tempo;

const char* kUsage =
    "usage: tempo generate [options]\n"
    "Greedy decoding with a Llama-3.2 decoder (random weights): steps and layers are temporal\n"
    "dimensions, the K/V cache is read through the attention pattern's index.\n\n"
    "  --config C        tiny (default), 1b or 3b (Llama-3.2 shapes)\n"
    "  --layers N        use the first N layers only\n"
    "  --prompt-tokens L comma-separated token ids fed first (default: 1)\n"
    "  --tokens N        decoding steps, prompt included (default 32)\n"
    "  --batch B         sequences decoded together, each fed the same prompt (default 1)\n"
    "  --attention A     causal (default), window:W or sinks:S:W\n"
    "  --tile Z          run attention over the cache in tiles of Z steps\n"
    "  --temperature X   sample from softmax(logits / X) instead of the argmax (default 0)\n"
    "  --eos ID          a sequence that emits ID repeats it from then on\n"
    "  --seed S          weight and sampling seed (default 0)\n";

int64_t positive(const std::string& flag, const std::string& s) {
  int64_t v = cli::parse_int(flag, s);
  if (v < 1) throw UserError(cat(flag, " expects a positive integer, got '", s, "'"));
  return v;
}

}  // namespace

int run_generate_command(int argc, char** argv) {
  std::string config = "tiny", prompt_text = "1", attention = "causal";
  int64_t layers = 0, tokens = 32, batch = 1, tile = 0, seed = 0;
  llm::Sampling sampling;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (k + 1 >= argc) throw UserError(cat("unknown option or missing value: ", a, " (try `tempo generate --help`)"));
    std::string v = argv[++k];
    if (a == "--config") config = v;
    else if (a == "--layers") layers = positive(a, v);
    else if (a == "--prompt-tokens") prompt_text = v;
    else if (a == "--tokens") tokens = positive(a, v);
    else if (a == "--batch") batch = positive(a, v);
    else if (a == "--attention") attention = v;
    else if (a == "--tile") tile = positive(a, v);
    else if (a == "--seed") seed = cli::parse_int(a, v);
    else if (a == "--temperature") sampling.temperature = cli::parse_double(a, v);
    else if (a == "--eos") sampling.eos = cli::parse_int(a, v);
    else throw UserError(cat("unknown option ", a, " (try `tempo generate --help`)"));
  }
  llm::LlamaConfig c = config == "tiny" ? llm::LlamaConfig::tiny()
                       : config == "1b" ? llm::LlamaConfig::llama_3_2_1b()
                       : config == "3b" ? llm::LlamaConfig::llama_3_2_3b()
                                        : throw UserError(cat("--config: expected tiny, 1b or 3b, got '", config, "'"));
  if (layers) {
    if (layers > c.layers) throw UserError(cat("--layers ", layers, ": the ", config, " model has ", c.layers));
    c.layers = layers;
  }
  const llm::AttentionPattern pattern = llm::AttentionPattern::parse(attention);
  if (pattern.kind != llm::AttentionPattern::Kind::Causal && pattern.window + pattern.sinks > tokens)
    throw UserError(cat("--attention ", attention, ": the window is longer than the ", tokens, " decoded tokens"));
  std::vector<int64_t> prompt;
  std::stringstream in(prompt_text);
  for (std::string id; std::getline(in, id, ',');) {
    char* end = nullptr;
    long long v = std::strtoll(id.c_str(), &end, 10);
    if (id.empty() || *end || v < 0 || v >= c.vocab)
      throw UserError(cat("--prompt-tokens: '", id, "' is not a token id below the vocabulary size ", c.vocab));
    prompt.push_back(v);
  }
  if (static_cast<int64_t>(prompt.size()) > tokens)
    throw UserError(cat("--prompt-tokens: the prompt (", prompt.size(), " tokens) is longer than --tokens ", tokens));
  HostTensor p(DType::Int64, {static_cast<int64_t>(prompt.size()), batch});
  for (size_t s = 0; s < prompt.size(); ++s)
    for (int64_t b = 0; b < batch; ++b) p.ptr<int64_t>()[s * batch + b] = prompt[s];

  llm::LlamaWeights w = llm::LlamaWeights::random(c, static_cast<uint64_t>(seed));
  Context ctx;
  Dim t = ctx.dim("t", "T"), l = ctx.dim("l", "L");
  RT out = llm::decode_tokens(ctx, c, w, p, t, l, pattern, sampling).retain();
  CompileOptions o;
  o.seed = static_cast<uint64_t>(seed);
  if (tile) o.passes.tiles = {{"t", tile}};
  auto t0 = std::chrono::steady_clock::now();
  Executable exe = ctx.compile({{t.bound, tokens}, {l.bound, c.layers}}, o);
  auto t1 = std::chrono::steady_clock::now();
  exe.run();
  auto t2 = std::chrono::steady_clock::now();
  for (int64_t b = 0; b < batch; ++b) {
    std::cout << "sequence " << b << ":";
    for (int64_t s = 0; s < tokens; ++s)
      std::cout << " " << exe.get(out, {s}).ptr<int64_t>()[b];
    std::cout << "\n";
  }
  std::cout << "compile " << std::chrono::duration<double>(t1 - t0).count() << " s, "
            << 1e3 * std::chrono::duration<double>(t2 - t1).count() / static_cast<double>(tokens)
            << " ms between tokens (" << c.layers << " layers, " << pattern.str() << ")\n";
  return 0;
}
