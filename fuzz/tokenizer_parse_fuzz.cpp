// llm::Tokenizer::parse on any text: a tokenizer or a UserError. A tokenizer that parses then
// encodes and decodes a fixed text (its ids are in the vocabulary; decode takes them back).
#include "fuzz_util.h"
#include "llm/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tempo::fuzz::expect_user_errors_only([&] {
    auto tok = tempo::llm::Tokenizer::parse(text, "fuzz input");
    const std::string sample = "Hello, world! 123 <|begin_of_text|> \xc3\xa9t\xc3\xa9\n";
    std::vector<int64_t> ids = tok.encode(sample, tok.bos() >= 0);
    for (int64_t id : ids) tempo::fuzz::check(id >= 0 && id < tok.vocab_size(), "id in the vocab");
    tok.decode(ids);
  });
  return 0;
}
