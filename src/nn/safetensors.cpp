// safetensors encoding and decoding; the header is read with nn/json.
#include "nn/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "nn/json.h"
#include "util/error.h"

namespace tempo::nn {

namespace {

const char* st_dtype(DType d) {
  switch (d) {
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    case DType::Float16:
      return "F16";
    case DType::BFloat16:
      return "BF16";
    case DType::Int64:
      return "I64";
    case DType::Int32:
      return "I32";
    case DType::Bool:
      return "BOOL";
  }
  return "?";
}

// The dtype a file's dtype name stands for (st_dtype's inverse); false for other names.
bool parse_dtype(const std::string& s, DType* out) {
  for (DType d : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64,
                  DType::Int32, DType::Bool})
    if (s == st_dtype(d)) {
      *out = d;
      return true;
    }
  return false;
}

// "[2, 3]" for errors.
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t k = 0; k < shape.size(); ++k) s += cat(k ? ", " : "", shape[k]);
  return s + "]";
}

}  // namespace

std::string safetensors_encode(const NamedTensors& tensors) {
  std::string header = "{";
  uint64_t offset = 0;
  for (size_t k = 0; k < tensors.size(); ++k) {
    const auto& [name, t] = tensors[k];
    uint64_t n = t.data.size();
    if (k) header += ',';
    header += json_quote(name);
    header += cat(":{\"dtype\":\"", st_dtype(t.dtype), "\",\"shape\":[");
    for (size_t d = 0; d < t.shape.size(); ++d) header += cat(d ? "," : "", t.shape[d]);
    header += cat("],\"data_offsets\":[", offset, ",", offset + n, "]}");
    offset += n;
  }
  header += "}";
  while (header.size() % 8 != 0) header += ' ';
  std::string out(8, '\0');
  uint64_t len = header.size();
  for (int b = 0; b < 8; ++b) out[b] = static_cast<char>((len >> (8 * b)) & 0xFF);
  out += header;
  out.reserve(out.size() + offset);
  // Host tensors are little-endian on every machine we run on.
  for (const auto& [name, t] : tensors)
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return out;
}

namespace {

[[noreturn]] void fail_load(const std::string& what, const std::string& msg) {
  throw UserError(cat("cannot load ", what, ": ", msg));
}

// The header's length from a file's first 8 bytes, checked against the file's size.
uint64_t header_length(const char* first8, uint64_t file_size, const std::string& what) {
  if (file_size < 8)
    fail_load(what, cat("file too short for a safetensors header (", file_size, " bytes)"));
  uint64_t len = 0;
  for (int b = 0; b < 8; ++b)
    len |= static_cast<uint64_t>(static_cast<uint8_t>(first8[b])) << (8 * b);
  if (len > file_size - 8)
    fail_load(what, cat("header length ", len, " exceeds the file size ", file_size));
  return len;
}

// A tensor's entry in the header: its type in the file, shape, and bytes in the data section.
struct Entry {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, bytes = 0;
};

// The entries of a header, checked against the data section of `data_size` bytes.
std::map<std::string, Entry> parse_header(const std::string& header, uint64_t data_size,
                                          const std::string& what) {
  auto fail = [&](const std::string& msg) { fail_load(what, msg); };
  Json root = parse_json(header, cat("safetensors header in ", what));
  if (root.kind != Json::Object) fail("the header is not a JSON object");
  std::map<std::string, Entry> out;
  for (const auto& [name, v] : root.members) {
    if (name == "__metadata__") continue;
    auto bad = [&](const std::string& msg) { fail(cat("tensor '", name, "': ", msg)); };
    if (v.kind != Json::Object) bad("entry is not an object");
    const Json* dt = v.get("dtype");
    const Json* shape = v.get("shape");
    const Json* offs = v.get("data_offsets");
    if (!dt || dt->kind != Json::String) bad("missing dtype");
    if (!shape || shape->kind != Json::Array) bad("missing shape");
    if (!offs || offs->kind != Json::Array || offs->items.size() != 2) bad("missing data_offsets");
    Entry e;
    if (!parse_dtype(dt->str, &e.dtype)) bad(cat("unsupported dtype ", dt->str));
    // The element count and byte size must fit: a wrapped product could match a small data range.
    uint64_t numel = 1;
    for (const Json& d : shape->items) {
      if (d.kind != Json::Number || !d.is_int || d.integer < 0) bad("bad shape entry");
      e.shape.push_back(d.integer);
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d.integer), &numel) ||
          numel > static_cast<uint64_t>(INT64_MAX))
        bad(cat("shape ", shape_text(e.shape), " has too many elements"));
    }
    if (__builtin_mul_overflow(numel, ir::dtype_size(e.dtype), &e.bytes))
      bad("shape too large for its dtype");
    for (const Json& o : offs->items)
      if (o.kind != Json::Number || !o.is_int || o.integer < 0) bad("bad data_offsets");
    uint64_t begin = offs->items[0].integer, end = offs->items[1].integer;
    if (begin > end || end > data_size)
      bad(cat("data_offsets [", begin, ", ", end, "] outside the data (", data_size, " bytes)"));
    if (end - begin != e.bytes)
      bad(cat("data_offsets cover ", end - begin, " bytes but the shape needs ", e.bytes));
    e.begin = begin;
    if (!out.emplace(name, std::move(e)).second) bad("duplicate name");
  }
  return out;
}

// Reads n bytes at offset `at` of the data section (which follows the header) into dst.
using ReadData = std::function<void(uint64_t at, uint64_t n, char* dst)>;

// An entry's tensor, read by `read` straight into its own storage; half types as they are with
// `keep_half`, else widened to float32.
HostTensor read_tensor(const Entry& e, const ReadData& read, bool keep_half) {
  HostTensor t(e.dtype, e.shape);  // e.bytes, in huge pages where large
  // An empty tensor reads nothing (its storage may have no address).
  if (e.bytes > 0) read(e.begin, e.bytes, reinterpret_cast<char*>(t.data.data()));
  if (!keep_half && ir::is_half(t.dtype)) return t.to(DType::Float32);
  return t;
}

}  // namespace

std::map<std::string, HostTensor> safetensors_decode(const std::string& bytes,
                                                     const std::string& what) {
  const uint64_t len = header_length(bytes.data(), bytes.size(), what);
  const char* data = bytes.data() + 8 + len;
  auto read = [data](uint64_t at, uint64_t n, char* dst) { std::memcpy(dst, data + at, n); };
  std::map<std::string, HostTensor> out;
  for (const auto& [name, e] : parse_header(bytes.substr(8, len), bytes.size() - 8 - len, what))
    out.emplace(name, read_tensor(e, read, false));
  return out;
}

struct SafetensorsReader::Impl {
  std::ifstream file;
  std::string what;  // the path, quoted, for errors
  uint64_t data_start = 0;
  std::map<std::string, Entry> entries;

  void read_at(uint64_t at, uint64_t n, char* dst) {
    file.seekg(static_cast<std::streamoff>(at));
    file.read(dst, static_cast<std::streamsize>(n));
    if (!file) fail_load(what, "read failed");
  }
};

SafetensorsReader::SafetensorsReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.file.open(path, std::ios::binary | std::ios::ate);
  if (!m.file) throw UserError(cat("cannot load '", path, "': no such file or not readable"));
  const std::streamoff size = m.file.tellg();
  if (size < 0) throw UserError(cat("cannot load '", path, "': not a readable file"));
  m.what = cat("'", path, "'");
  char first8[8] = {};
  if (size >= 8) m.read_at(0, 8, first8);
  const uint64_t len = header_length(first8, static_cast<uint64_t>(size), m.what);
  std::string header(len, '\0');
  m.read_at(8, len, header.data());
  m.data_start = 8 + len;
  m.entries = parse_header(header, static_cast<uint64_t>(size) - m.data_start, m.what);
}

SafetensorsReader::~SafetensorsReader() = default;

std::vector<std::string> SafetensorsReader::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : impl_->entries) out.push_back(name);
  return out;
}

const std::vector<int64_t>* SafetensorsReader::shape(const std::string& name) const {
  auto it = impl_->entries.find(name);
  return it == impl_->entries.end() ? nullptr : &it->second.shape;
}

HostTensor SafetensorsReader::read(const std::string& name, bool keep_half) {
  Impl& m = *impl_;
  auto it = m.entries.find(name);
  if (it == m.entries.end()) fail_load(m.what, cat("no tensor '", name, "'"));
  return read_tensor(
      it->second,
      [&m](uint64_t at, uint64_t n, char* dst) { m.read_at(m.data_start + at, n, dst); },
      keep_half);
}

namespace {

// Writes all of `bytes` to a new file `tmp` and flushes it to the disk; "" or the system's error.
std::string write_new_file(const std::string& tmp, const std::string& bytes) {
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return cat("cannot create ", tmp, ": ", std::strerror(errno));
  std::string err;
  for (size_t done = 0; done < bytes.size() && err.empty();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = std::strerror(errno);
    if (n >= 0) done += static_cast<size_t>(n);
  }
  // The data reaches the disk before the rename makes it visible under its name.
  if (err.empty() && ::fsync(fd) != 0) err = std::strerror(errno);
  if (::close(fd) != 0 && err.empty()) err = std::strerror(errno);
  return err;
}

}  // namespace

void write_atomic(const std::string& path, const std::string& bytes, const std::string& what) {
  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path tmp = target;
  tmp += cat(".tmp.", ::getpid());  // one per process: concurrent writers do not collide
  std::string err = write_new_file(tmp.string(), bytes);
  std::error_code ec;
  if (!err.empty()) {
    fs::remove(tmp, ec);
    throw UserError(cat("cannot write ", what, " '", path, "': ", err));
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw UserError(cat("cannot write ", what, " '", path, "': ", ec.message()));
  }
}

void save(const std::string& path, const NamedTensors& tensors) {
  write_atomic(path, safetensors_encode(tensors), "checkpoint");
}

std::map<std::string, HostTensor> load(const std::string& path, bool keep_half) {
  SafetensorsReader file(path);
  std::map<std::string, HostTensor> out;
  for (const std::string& name : file.names()) out.emplace(name, file.read(name, keep_half));
  return out;
}

}  // namespace tempo::nn
