// A finished MMapGame as the swap policy of the program it was extracted from.
#include "mmap/placement.h"
#include "driver/compile.h"

#include <algorithm>
#include <memory>

#include "driver/trace.h"
#include "mmap/baselines.h"
#include "mmap/muzero.h"
#include "util/error.h"

namespace tempo::mmap {

ProgramPlacement placement_from_game(const Instance& inst, const TraceSummary& summary,
                                     const std::vector<Action>& decisions) {
  std::map<std::string, std::pair<double, double>> bytes;  // per op: slow, all
  for (size_t k = 0; k < inst.buffers.size(); ++k) {
    const Buffer& b = inst.buffers[k];
    const size_t tensor = static_cast<size_t>(b.tensor_id);
    if (tensor >= summary.tensor_op.size()) internal_error("a buffer of an unknown tensor");
    const int64_t op = summary.tensor_op[tensor];
    if (op < 0 || static_cast<size_t>(op) >= summary.op_names.size()) continue;
    // The storage counts for every op whose store may hold it (a Merge of it, a view).
    std::vector<int64_t> names = {op};
    if (static_cast<size_t>(op) < summary.op_holders.size())
      names.insert(names.end(), summary.op_holders[static_cast<size_t>(op)].begin(),
                   summary.op_holders[static_cast<size_t>(op)].end());
    const bool dropped = k >= decisions.size() || decisions[k] == Action::Drop;
    for (int64_t n : names) {
      auto& [slow, all] = bytes[summary.op_names[static_cast<size_t>(n)]];
      all += static_cast<double>(b.size);
      if (dropped) slow += static_cast<double>(b.size);
    }
  }
  ProgramPlacement p;
  for (const auto& [name, sa] : bytes) {
    p.slow_share[name] = sa.second > 0 ? sa.first / sa.second : 0;
    p.bytes[name] = sa.second;
  }
  return p;
}

std::string ProgramPlacement::largest(size_t n) const {
  std::vector<std::pair<double, std::string>> by_bytes;
  for (const auto& [name, b] : bytes) by_bytes.emplace_back(b, name);
  std::sort(by_bytes.rbegin(), by_bytes.rend());
  std::string out;
  for (size_t k = 0; k < std::min(n, by_bytes.size()); ++k)
    out += cat(k ? "; " : "", by_bytes[k].second, ": ",
               static_cast<int>(100 * slow_share.at(by_bytes[k].second) + 0.5), "% in slow memory");
  return out;
}

SwapPolicy swap_policy(const ProgramPlacement& placement) {
  return
      [share = placement.slow_share](const std::vector<SwapCandidate>& candidates, int64_t excess) {
        auto slow = [&](const SwapCandidate& c) {
          auto it = share.find(c.rt);
          return it == share.end() ? 0.0 : it->second;
        };
        std::vector<size_t> order(candidates.size());
        for (size_t k = 0; k < order.size(); ++k) order[k] = k;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
          const bool sa = slow(candidates[a]) >= 0.5, sb = slow(candidates[b]) >= 0.5;
          if (sa != sb) return sa;
          if (sa && slow(candidates[a]) != slow(candidates[b]))
            return slow(candidates[a]) > slow(candidates[b]);
          return candidates[a].bytes > candidates[b].bytes;
        });
        return driver::pick_until_covered(candidates, order, excess);
      };
}

ProgramPlacement place_rl_program(const RlProgram& program, const std::string& solver) {
  const bool learned = solver.rfind("learned:", 0) == 0;
  if (solver != "heuristic" && !learned)
    throw UserError(cat("swap policy '", solver,
                        "': expected largest, heuristic or learned:FILE (a network from "
                        "`tempo mmap train`)"));
  std::shared_ptr<MuZeroNetwork> net;
  if (learned) {
    const std::string path = solver.substr(8);
    if (path.empty()) throw UserError("swap policy learned:FILE needs the network's file");
    net = std::make_shared<MuZeroNetwork>(MuZeroNetwork::load(path));
  }
  TraceSummary summary;
  auto inst = std::make_shared<const Instance>(
      extract_rl_instance(program, measure_copy_model(), {}, &summary));
  const SearchResult h = heuristic(inst);
  std::vector<Action> decisions = play(inst, h.decisions).decisions();  // as played
  double ret = h.best_return;
  if (net) {
    MctsOptions m;
    m.simulations = 400;
    m.seconds = 5;  // for the game: traced programs have thousands of buffers
    const MctsResult r = play_muzero(inst, net, m);
    decisions = r.decisions;
    ret = r.best_return;
  }
  ProgramPlacement p = placement_from_game(*inst, summary, decisions);
  p.solver = solver;
  p.game_return = ret;
  p.heuristic_return = h.best_return;
  return p;
}

}  // namespace tempo::mmap
