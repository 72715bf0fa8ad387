// The LibTorch backend: runs SDG ops as LibTorch (ATen) calls on one device. This header does not
// include LibTorch, so that the driver and tests that do not need it compile quickly.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "backend/codegen.h"
#include "backend/distributed.h"
#include "runtime/backend.h"

namespace tempo::backend {

// `device` is a LibTorch device string: "cpu", "cuda" or "cuda:N". A CUDA device needs a build
// with -DTEMPO_CUDA=ON against a CUDA LibTorch; asking for one otherwise is a UserError.
struct BackendOptions {
  // The clusters of fused regions run as generated code (backend/codegen.h): C++ loops on the
  // CPU, CUDA kernels (NVRTC) on a GPU; compiled once per program and cached on disk.
  bool codegen = true;
  // The order of the CPU loops of narrow clusters (codegen.h's LoopSchedules), and the policy
  // that chooses it with LoopSchedules::Policy (required there).
  LoopSchedules loop_schedules = LoopSchedules::Measured;
  LoopSchedulePolicy loop_schedule_policy;
  // With LoopSchedules::Measured: a CSV file each decision is appended to (loop_choice.h's
  // append_loop_timing), the data a learned policy is trained on. Empty: none.
  std::string loop_timings;
  // Receives a line per loop order decided (CompileOptions::verbose). Empty: none.
  std::function<void(const std::string&)> log;
  // On the CPU, also generate and compile (NVRTC, no GPU needed) the CUDA kernels of every
  // cluster, failing on one that does not compile. Needs a CUDA build; its test suite sets it
  // ($TEMPO_CHECK_CUDA_KERNELS, read by the driver).
  bool check_cuda_kernels = false;
  // A generated loop writes its output into a dead input's buffer (TEMPO §5.2's donation).
  bool donation = true;
  // A constant tensor of the program (ir::Udf::constant: a model's weights) is made on the
  // device at the first run and kept for the next ones, instead of copied from the host every
  // run. Off under a memory budget, where swapping may move such a tensor to host memory.
  bool keep_constants = true;
  // The collectives' process group (make_process_group); null: one process, where AllReduce
  // and Broadcast are identities.
  std::shared_ptr<ProcessGroup> process_group;
};
std::unique_ptr<runtime::Backend> make_libtorch_backend(const std::string& device = "cpu",
                                                        BackendOptions options = {});

// Sets LibTorch's intra-op thread count and, where the BLAS is OpenBLAS (setup.sh installs it),
// the BLAS's thread count too. Both this and make_libtorch_backend also replace OpenBLAS's
// fallback kernels for a CPU model it does not know with those of the CPU's vector width
// (backend::vector_isa: AVX-512 or AVX2), unless OPENBLAS_CORETYPE chooses.
void set_num_threads(int n);

// The BLAS's kernels, for logs and tests: "OpenBLAS SkylakeX", or "" where the BLAS is not
// OpenBLAS (e.g. a LibTorch with MKL).
std::string blas_kernels();

// The device a program runs on by default: $TEMPO_DEVICE if set, else "cuda" in a CUDA build
// with a GPU present, else "cpu".
std::string default_device();

}  // namespace tempo::backend
