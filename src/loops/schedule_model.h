// A learned loop schedule policy for Tempo's own generated CPU loops (backend/codegen.h's
// LoopOrder: rows outer, or interchanged for narrow rows). A cost model, an MLP, predicts the log
// of the interchanged loop's time over the rows-outer loop's for a cluster at a size, from the
// cluster's LoopFeatures and the size; it is trained with Tempo's own api (a Tempo program over
// an iteration dimension, Adam on the squared error) on the times that measured loop schedules
// recorded while Tempo's programs ran (CompileOptions::loop_timings). The policy runs the
// interchanged loop where the model predicts it at least 5% faster, the measured search's own
// rule, without compiling both orders where the size is known at compile time and without timing.
// It decides only for clusters it was trained on (their LoopFeatures, at any size) and where the
// prediction is not within kUnsure of that rule's threshold; elsewhere the sizes are measured, as
// by default: held out of the training, a program's new clusters were where it erred (one
// algorithm's programs left out: 33-62% agreement for SAC, DQN and PPO).
//
//   std::vector<LoopTiming> data = read_loop_timings("timings.csv");
//   ScheduleModel m = ScheduleModel::train(data, {});
//   m.save("loop_schedules.safetensors");
//   options.loop_schedules = backend::LoopSchedules::Policy;
//   options.loop_schedule_policy = ScheduleModel::load("loop_schedules.safetensors").policy();
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/codegen.h"
#include "loops/dense_layer.h"

namespace tempo {
struct CompileOptions;
}

namespace tempo::loops {

// One measured decision: a cluster at a size, and the best time of each order.
struct LoopTiming {
  backend::LoopFeatures cluster;
  int64_t rows = 0, cols = 0;
  double rows_outer_s = 0, columns_outer_s = 0;
  std::string source;  // the file (and line) it was read from
};
// The rows of a CSV file written by measured loop schedules (backend/loop_choice.h); UserError
// naming the file and line where it is not such a file.
std::vector<LoopTiming> read_loop_timings(const std::string& path);

struct ScheduleModelOptions {
  int64_t hidden = 32;  // two hidden layers of this width (tanh)
  int64_t steps = 1500;  // Adam steps on the whole data set
  double learning_rate = 3e-3;
  uint64_t seed = 1;
};

class ScheduleModel {
 public:
  // `losses` (may be null) receives the loss of every step.
  static ScheduleModel train(const std::vector<LoopTiming>& data, const ScheduleModelOptions& o,
                             std::vector<double>* losses = nullptr);
  // Predicted log(columns-outer time / rows-outer time).
  double predict(const backend::LoopFeatures& cluster, int64_t rows, int64_t cols) const;
  // The order, or nullopt (measure) for a cluster not in the training data or where the
  // prediction is within `unsure` of the threshold.
  std::optional<backend::LoopOrder> choose(const backend::LoopFeatures& cluster, int64_t rows,
                                           int64_t cols, double unsure = kUnsure) const;
  bool knows(const backend::LoopFeatures& cluster) const;
  static constexpr double kUnsure = 0.1;  // in log time: about 10%
  backend::LoopSchedulePolicy policy() const;  // holds a copy of the model
  // A safetensors file; load() checks it (UserError naming the file).
  void save(const std::string& path) const;
  static ScheduleModel load(const std::string& path);

  static constexpr int kInputs = backend::LoopFeatures::kCount + 4;  // the features and the size

 private:
  using Dense = DenseLayer;
  using Counts = std::array<int, backend::LoopFeatures::kCount>;
  std::vector<float> mean_, scale_;  // the inputs' standardization
  std::vector<Dense> layers_;
  std::set<Counts> known_;  // the clusters of the training data
};

// Training data without Tempo's own programs: `programs` generated programs (seeded), each a
// random chain over rows x cols of 1 to 16 columns (elementwise ops, sums and maxima of rows,
// log-softmax and softmax, inputs per element, per row and per column) that fuses into loops
// over narrow rows, run at one size with measured loop schedules, their timings appended to
// `path`. Returns the decisions appended.
int64_t generate_loop_timings(int programs, uint64_t seed, const std::string& path);

// How well a choice does on measured decisions: how often it picks the order the measurement
// picked (the interchanged one where it was at least 5% faster), and the times summed over the
// decisions of its picks, of the rows-outer, the interchanged and the faster order at each.
struct ScheduleScore {
  int64_t decisions = 0, agreements = 0;
  int64_t measured = 0;  // decisions left to the measurement: they agree, at the measured pick
  double chosen_s = 0, rows_outer_s = 0, columns_outer_s = 0, best_s = 0;
};
ScheduleScore score_schedules(
    const std::vector<LoopTiming>& data,
    const std::function<std::optional<backend::LoopOrder>(const LoopTiming&)>& choose);

// Sets `o` to run the loop schedules a `learned:FILE` names (a ScheduleModel file), or one of
// backend::parse_loop_schedules' names; UserError naming `what` otherwise.
void set_loop_schedules(CompileOptions& o, const std::string& name, const std::string& what);

}  // namespace tempo::loops
