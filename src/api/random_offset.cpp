#include "api/random_offset.h"

namespace tempo {

void offset_random_draws(Context& ctx, const Dim& d, int64_t offset) {
  for (ir::OpId id = 0; id < static_cast<ir::OpId>(ctx.graph().num_ops()); ++id) {
    ir::OpNode& op = ctx.graph().op(id);
    if (op.kind != ir::OpKind::RandUniform && op.kind != ir::OpKind::RandNormal) continue;
    std::vector<int64_t>& ints = op.attrs.ints;
    // After the stream: one offset per domain dim (the backend adds it to the point).
    if (ints.empty()) ints.push_back(id);  // the stream Context gives it
    if (ints.size() == 1) ints.resize(1 + op.domain.size(), 0);
    for (size_t k = 0; k < op.domain.size(); ++k)
      if (op.domain[k].var.same(d.var)) ints[1 + k] = offset;
  }
}

}  // namespace tempo
