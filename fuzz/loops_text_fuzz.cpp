// The loop-program text format: parse_program on any text gives a program or a UserError.
#include "fuzz_util.h"
#include "loops/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tempo::fuzz::expect_user_errors_only(
      [&] { tempo::loops::parse_program(text, "fuzz.loop", "fuzz"); });
  return 0;
}
