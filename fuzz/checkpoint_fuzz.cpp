// The Hugging Face checkpoint loader on a directory written from the input: the pieces between
// "\n@@\n" separators are, in order, config.json, model.safetensors.index.json (not written when
// empty), model.safetensors, then shard files model-1.safetensors, model-2.safetensors, ...
// (an index names them). Loading gives weights or a UserError.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fuzz_util.h"
#include "llm/checkpoint.h"

namespace {

namespace fs = std::filesystem;

// One directory per process, emptied before each input.
const fs::path& work_dir() {
  static const fs::path dir = [] {
    fs::path d =
        fs::temp_directory_path() / ("tempo_checkpoint_fuzz." + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> pieces =
      tempo::fuzz::split(std::string(reinterpret_cast<const char*>(data), size), "\n@@\n");
  const fs::path& dir = work_dir();
  for (const auto& entry : fs::directory_iterator(dir)) fs::remove_all(entry.path());
  write_file(dir / "config.json", pieces[0]);
  if (pieces.size() > 1 && !pieces[1].empty())
    write_file(dir / "model.safetensors.index.json", pieces[1]);
  if (pieces.size() > 2) write_file(dir / "model.safetensors", pieces[2]);
  for (size_t k = 3; k < pieces.size(); ++k)
    write_file(dir / ("model-" + std::to_string(k - 2) + ".safetensors"), pieces[k]);
  tempo::fuzz::expect_user_errors_only([&] { tempo::llm::load_llama_checkpoint(dir.string()); });
  return 0;
}
