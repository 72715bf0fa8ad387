#include "api/random_offset.h"

namespace tempo {

void offset_random_draws(Context& ctx, const Dim& d, int64_t offset) {
  for (ir::OpId id = 0; id < static_cast<ir::OpId>(ctx.graph().num_ops()); ++id) {
    ir::OpNode& op = ctx.graph().op(id);
    if (op.kind != ir::OpKind::RandUniform && op.kind != ir::OpKind::RandNormal) continue;
    ir::DrawKey key = ir::draw_key(op);  // over the op's domain: no pass has run yet
    for (size_t j = 0; j < key.sources.size(); ++j) {
      const int64_t s = key.sources[j];
      if (s < 0 && op.domain[static_cast<size_t>(-1 - s)].var.same(d.var)) key.offsets[j] = offset;
    }
    ir::set_draw_key(op.attrs, key);
  }
}

}  // namespace tempo
