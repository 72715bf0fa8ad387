// MMapGame instance files: instance_from_string on any text gives a valid instance or a
// UserError; a loaded instance prints and reads back as the same text.
#include "fuzz_util.h"
#include "mmap/instance.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tempo::fuzz::expect_user_errors_only([&] {
    tempo::mmap::Instance inst = tempo::mmap::instance_from_string(text, "fuzz input");
    inst.validate();
    const std::string printed = tempo::mmap::instance_to_string(inst);
    tempo::mmap::Instance back = tempo::mmap::instance_from_string(printed, "printed instance");
    tempo::fuzz::check(tempo::mmap::instance_to_string(back) == printed, "print round trip");
  });
  return 0;
}
