#include "rewrite/search.h"

#include <chrono>
#include <memory>
#include <queue>
#include <unordered_set>

namespace tempo::rewrite {

namespace {
struct Entry {
  double cost;
  std::shared_ptr<const Graph> graph;
  std::shared_ptr<const std::vector<Match>> path;
  bool operator>(const Entry& o) const { return cost > o.cost; }
};
}  // namespace

SearchResult taso_search(const Graph& g, CostModel& cost, const SearchOptions& options) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  SearchResult r;
  r.best = g;
  r.initial_cost = r.best_cost = cost.graph_cost(g);
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  std::unordered_set<uint64_t> seen{g.hash()};
  queue.push({r.best_cost, std::make_shared<const Graph>(g),
              std::make_shared<const std::vector<Match>>()});
  while (!queue.empty() && r.expanded < options.budget) {
    if (options.max_seconds > 0 && elapsed() > options.max_seconds) break;
    Entry e = queue.top();
    queue.pop();
    ++r.expanded;
    if (e.cost < r.best_cost) {
      r.best_cost = e.cost;
      r.best = *e.graph;
      r.steps = *e.path;
    }
    for (const Match& m : all_matches(*e.graph)) {
      Graph next = apply(*e.graph, m);
      if (!seen.insert(next.hash()).second) continue;
      ++r.generated;
      double c = cost.graph_cost(next);
      if (c < options.alpha * r.best_cost) {
        auto path = std::make_shared<std::vector<Match>>(*e.path);
        path->push_back(m);
        if (c < r.best_cost) {  // the best is kept when found, not only when popped
          r.best_cost = c;
          r.best = next;
          r.steps = *path;
        }
        queue.push({c, std::make_shared<const Graph>(std::move(next)), std::move(path)});
      }
    }
    // The queue keeps the cheapest graphs when it grows past its bound.
    if (static_cast<int64_t>(queue.size()) > options.max_queue) {
      std::vector<Entry> keep;
      while (static_cast<int64_t>(keep.size()) < options.max_queue / 2) {
        keep.push_back(queue.top());
        queue.pop();
      }
      queue = {};
      for (auto& k : keep) queue.push(std::move(k));
    }
  }
  r.seconds = elapsed();
  return r;
}

}  // namespace tempo::rewrite
