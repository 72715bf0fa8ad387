// nn::parse_json on any bytes: a Json tree or a UserError; a parsed string re-quotes and reads
// back.
#include "fuzz_util.h"
#include "nn/json.h"

namespace {

// Every string of the tree (member names and string values) survives json_quote and parse_json.
void check_strings(const tempo::nn::Json& v, int depth) {
  using tempo::nn::Json;
  if (depth > 4) return;  // a few levels suffice; deep trees would make each run slow
  auto round_trip = [](const std::string& s) {
    Json back = tempo::nn::parse_json(tempo::nn::json_quote(s), "quoted string");
    tempo::fuzz::check(back.kind == Json::String && back.str == s, "json_quote round trip");
  };
  if (v.kind == Json::String) round_trip(v.str);
  for (const auto& [k, m] : v.members) {
    round_trip(k);
    check_strings(m, depth + 1);
  }
  for (const Json& item : v.items) check_strings(item, depth + 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  tempo::fuzz::expect_user_errors_only([&] {
    tempo::nn::Json v = tempo::nn::parse_json(text, "fuzz input");
    check_strings(v, 0);
  });
  return 0;
}
