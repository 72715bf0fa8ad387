// A linear layer evaluated on the host, y = W x + b: how the learned loop policies (the Pearl
// network, the loop schedule model) run their trained weights outside a Tempo program.
#pragma once

#include <cstdint>
#include <vector>

namespace tempo::loops {

struct DenseLayer {
  std::vector<float> w, b;  // (out x in) row-major, (out); b empty: no bias
  int64_t in = 0, out = 0;

  void apply(const float* x, float* y) const {
    for (int64_t o = 0; o < out; ++o) {
      const float* row = w.data() + o * in;
      float s = b.empty() ? 0.f : b[static_cast<size_t>(o)];
      for (int64_t i = 0; i < in; ++i) s += row[i] * x[i];
      y[o] = s;
    }
  }
};

}  // namespace tempo::loops
