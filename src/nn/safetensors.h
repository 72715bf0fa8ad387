// The safetensors file layout: an 8-byte little-endian header length, a JSON header
// {name: {"dtype", "shape", "data_offsets"}} (space-padded to 8 bytes), then the raw
// little-endian data. Supported dtypes: F32, F64, I64, I32, BOOL, F16 and BF16 (widened to
// Float32 on load unless asked to keep them).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/tempo.h"

namespace tempo::nn {

using NamedTensors = std::vector<std::pair<std::string, HostTensor>>;

// The file's bytes for these tensors (in this order).
std::string safetensors_encode(const NamedTensors& tensors);
// Parses a file's bytes; `what` names the file in errors (UserError on malformed input).
std::map<std::string, HostTensor> safetensors_decode(const std::string& bytes,
                                                     const std::string& what);

// Writes atomically: a temporary file in the same directory, then a rename.
void save(const std::string& path, const NamedTensors& tensors);
// Writes `bytes` to `path` the same way: readers see the old file or the new one, never half of
// it. UserError naming `what` (e.g. "checkpoint") and the path when it cannot.
void write_atomic(const std::string& path, const std::string& bytes,
                  const std::string& what = "file");
// A file opened for reading: its header is read and checked at once, each tensor is read from the
// file into its own storage when asked for, so that a large checkpoint is never held twice.
// UserError naming the file when it is missing or malformed.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path);
  ~SafetensorsReader();
  std::vector<std::string> names() const;
  // The shape of tensor `name` (null where the file has none of that name).
  const std::vector<int64_t>* shape(const std::string& name) const;
  // Tensor `name`: F16 and BF16 widened to Float32 unless `keep_half`, which keeps them as
  // Float16 and BFloat16 host tensors.
  HostTensor read(const std::string& name, bool keep_half = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Every tensor of a file, read as SafetensorsReader::read reads them.
std::map<std::string, HostTensor> load(const std::string& path, bool keep_half = false);

}  // namespace tempo::nn
