// Running rewrite graphs on the backend's eager operations (LibTorch, backend/eager_ops.h): the
// reference interpreter (verification of substitutions on random inputs) and TASO's cost model
// (the runtime of a graph is the sum of its operators' runtimes, each measured once per
// (operator, attributes, input shapes) and cached).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rewrite/graph.h"

namespace tempo::rewrite {

struct HostValue {
  Shape shape;
  std::vector<double> data;
};

struct EvalOptions {
  uint64_t seed = 1;
  // Values drawn as small integers in double precision: sums and products are exact, so equal
  // graphs give bit-equal outputs (the enumerator's fingerprints); otherwise scaled floats.
  bool integer_values = false;
  // Weights drawn at this multiple of their He scale. BERT as TASO writes it has no softmax and
  // no layer norm, so its activations overflow float32 within 12 layers at 1; 0.1 keeps them
  // finite for comparing outputs.
  double weight_scale = 1.0;
};

// The graph's outputs for input and weight values drawn from their names and the seed.
std::vector<HostValue> evaluate(const Graph& g, const EvalOptions& options = {});

// The largest |a - b| over all output elements relative to the largest |b| of the same output;
// infinity if the shapes differ (or a value is NaN).
double max_difference(const std::vector<HostValue>& a, const std::vector<HostValue>& b);

struct CostOptions {
  int threads = 1;        // LibTorch intra-op threads while measuring (restored afterwards)
  int rounds = 5;         // an op's time: the fastest of `rounds` averages ...
  double min_ms = 2.0;    // ... each over enough calls to take at least this long
  std::string cache_file;  // when set, measured costs are read from and appended to it
};

// TASO's cost model over LibTorch on this machine (milliseconds).
class CostModel {
 public:
  explicit CostModel(CostOptions options = {});
  // The measured time of node `n` (0 for inputs, weights and nodes computed only from weights,
  // which are folded before running).
  double op_cost(const Graph& g, int n);
  double graph_cost(const Graph& g);
  // End-to-end: the fastest of `reps` runs of the whole graph (constants folded beforehand).
  // `ops_in_graph_ms`: the sum over ops of each op's fastest time within those runs, which
  // checks the cost model's additivity (inputs as the graph leaves them, caches as the graph
  // leaves them) apart from preemption on a loaded machine, which whole runs cannot escape.
  double measure_graph(const Graph& g, int reps = 5, double* ops_in_graph_ms = nullptr);
  size_t measured() const { return costs_.size(); }
  int64_t measurements() const { return measurements_; }  // new keys measured by this object

  // The cache key of node `n`: kind, attributes and input shapes.
  static std::string key(const Graph& g, int n);

 private:
  double measure_op(const Graph& g, int n);
  CostOptions options_;
  std::map<std::string, double> costs_;
  int64_t measurements_ = 0;
};

}  // namespace tempo::rewrite
