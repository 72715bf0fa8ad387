// sym::parse on any text over the dims t:T, i:I: an expression or a UserError; what parses
// prints and parses back to the same expression (parse.h's promise).
#include "fuzz_util.h"
#include "symbolic/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tempo::sym::Dims dims = tempo::sym::parse_dims("t:T,i:I");
  const std::string text(reinterpret_cast<const char*>(data), size);
  tempo::fuzz::expect_user_errors_only([&] {
    tempo::sym::Expr e = tempo::sym::parse(text, dims);
    tempo::sym::Expr back = tempo::sym::parse(e.str(), dims);
    tempo::fuzz::check(back.same(e), "parse(e.str()).same(e)");
  });
  return 0;
}
