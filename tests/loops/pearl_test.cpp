// The generator's programs, the loop-nest graph, and the Pearl agent: its CPU forward pass against
// Tempo's, its masked policy, and a short training run by Tempo.
#include "driver/compile.h"
#include "loops/pearl.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>

#include "loops/benchmarks.h"
#include "loops/generator.h"
#include "nn/safetensors.h"
#include "util/error.h"

namespace tempo::loops {
namespace {

RunOptions test_options() {
  RunOptions o;
  o.threads = 2;
  o.reps = 1;
  return o;
}

// Generated programs at the test size, from seed 100.
std::vector<Program> small_programs(int count) {
  GeneratorOptions small;
  small.small = true;
  return generate_programs(100, count, small);
}

PearlOptions tiny() {
  PearlOptions o;
  o.hidden = 16;
  o.mlp = 32;
  o.batch = 24;
  o.epochs = 4;
  o.iterations = 2;
  o.pretrain_steps = 40;
  o.imitation_steps = 40;
  o.entropy_start = o.entropy_end = 0.01;  // a constant loss term: steps compare
  o.learning_rate = 1e-3;
  o.run = test_options();
  return o;
}

TEST(Generator, ProgramsAreValidAndSeeded) {
  std::set<std::string> shapes;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    Program p = generate_program(seed);
    EXPECT_NO_THROW(p.validate());
    EXPECT_GE(p.statements.size(), 1u);
    EXPECT_LE(p.statements.size(), 3u);
    for (const Statement& s : p.statements) {
      EXPECT_GE(s.vars.size(), 2u);
      EXPECT_LE(s.vars.size(), 3u);
    }
    EXPECT_EQ(p.statements[0].body, generate_program(seed).statements[0].body);
    Dependences deps(p);  // isl accepts it
    std::string text;
    for (const Statement& s : p.statements) text += s.domain + s.body + "\n";
    shapes.insert(text);
  }
  EXPECT_GT(shapes.size(), 30u);  // really different programs
}

TEST(Generator, RandomLegalTransformationsKeepTheChecksum) {
  std::mt19937 rng(3);
  Evaluator ev(test_options());
  GeneratorOptions small;
  small.small = true;
  int transformed = 0;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Program p = generate_program(seed, small);
    double reference = run_unoptimized(p, ev).checksum;
    LoopEnv env(p);
    int applied = 0;
    for (int tries = 0; tries < 100 && applied < 3 && !env.done(); ++tries) {
      int a = static_cast<int>(rng() % num_actions());
      if (action_space()[a].kind == Kind::Next && rng() % 3) continue;
      if (env.step(a) && action_space()[a].kind != Kind::Next) ++applied;
    }
    transformed += applied > 0;
    Measurement m = ev.measure(p, env.schedule());
    EXPECT_TRUE(same_checksum(m.checksum, reference)) << p.name << "\n"
                                                      << kernel_code(p, env.schedule());
  }
  EXPECT_GE(transformed, 5);
}

TEST(Graph, NodesFollowTheLoopTree) {
  Program p = benchmark("jacobi2d", Size::Small);  // t { i { j { S0 } } i { j { S1 } } }
  GraphEncoder enc(p);
  Schedule s = Schedule::original(p);
  LoopGraph g0 = enc.encode(s, 0), g1 = enc.encode(s, 1);
  // Loops t, i, j, i, j; two statements; 6 accesses each.
  EXPECT_EQ(g0.nodes, 5 + 2 + 12);
  EXPECT_NE(g0.x, g1.x);  // the branch is tagged
  for (int n = 0; n < kMaxNodes; ++n) EXPECT_EQ(g0.adjacency[n * kMaxNodes + n], 1.f);
  Schedule tiled = *apply(s, 0, {Kind::Tile, 1, 2, 0, 4, 4});
  EXPECT_EQ(enc.encode(tiled, 0).nodes, g0.nodes + 2);
}

// Random weights of the network's shapes.
std::map<std::string, HostTensor> random_weights(const PearlOptions& o, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.f, 0.3f);
  std::map<std::string, HostTensor> w;
  for (const auto& [name, shape] : pearl_parameter_shapes(o)) {
    HostTensor t(DType::Float32, shape);
    for (int64_t k = 0; k < t.numel(); ++k) t.ptr<float>()[k] = n(rng);
    w[name] = t;
  }
  return w;
}

class PearlHeads : public ::testing::TestWithParam<int> {};

// One attention head and four (the paper's), each on hidden / heads channels.
TEST_P(PearlHeads, CpuForwardMatchesTempo) {
  PearlOptions o = tiny();
  o.heads = GetParam();
  auto weights = random_weights(o, 5);
  PearlNetwork net(weights, o);
  std::vector<LoopGraph> graphs;
  for (const char* name : {"doitgen", "seidel2d", "mvt"}) {
    Program p = benchmark(name, Size::Small);
    GraphEncoder enc(p);
    graphs.push_back(enc.encode(Schedule::original(p), 1 % static_cast<int>(p.statements.size())));
  }
  const int64_t B = static_cast<int64_t>(graphs.size());
  HostTensor x(DType::Float32, {B, kMaxNodes, kFeatures}), adj(DType::Float32, {B, kMaxNodes, kMaxNodes}),
      mask(DType::Float32, {B, kMaxNodes, 1});
  for (int64_t b = 0; b < B; ++b) {
    std::copy(graphs[b].x.begin(), graphs[b].x.end(), x.ptr<float>() + b * kMaxNodes * kFeatures);
    std::copy(graphs[b].adjacency.begin(), graphs[b].adjacency.end(),
              adj.ptr<float>() + b * kMaxNodes * kMaxNodes);
    std::copy(graphs[b].mask.begin(), graphs[b].mask.end(), mask.ptr<float>() + b * kMaxNodes);
  }
  Context ctx;
  PearlModel m = make_pearl_model(ctx, nn::Steps(), o);
  for (const auto& [name, p] : m.named_parameters()) p.set_initial(weights.at(name), name);
  PearlOutputs out = pearl_forward(m, ctx.tensor(x), ctx.tensor(adj), ctx.tensor(mask));
  RT logits = out.logits.retain(), value = out.value.retain();
  Executable exe = compile(ctx, {});
  exe.run();
  HostTensor lt = exe.get(logits, {}), vt = exe.get(value, {});
  std::vector<float> l;
  float v;
  for (int64_t b = 0; b < B; ++b) {
    net.forward(graphs[b], l, v);
    EXPECT_NEAR(v, vt.at(b), 1e-3 * (1 + std::abs(v)));
    for (int a = 0; a < num_actions(); ++a)
      ASSERT_NEAR(l[a], lt.at(b * num_actions() + a), 1e-3 * (1 + std::abs(l[a]))) << b << " " << a;
  }
}

INSTANTIATE_TEST_SUITE_P(Pearl, PearlHeads, ::testing::Values(1, 4));

TEST(Pearl, HeadsMustDivideTheWidth) {
  PearlOptions o = tiny();
  o.heads = 3;  // hidden 16
  Context ctx;
  EXPECT_THROW(make_pearl_model(ctx, nn::Steps(), o), UserError);
  EXPECT_THROW(train_pearl({benchmark("mvt", Size::Small)}, o), UserError);
}

// The saved agent keeps its sizes, the heads included; a file that is no agent is a UserError.
TEST(Pearl, SavedAgentsLoadWithTheirSizes) {
  PearlOptions o = tiny();
  o.heads = 2;
  PearlNetwork net(random_weights(o, 3), o);
  const std::string path = ::testing::TempDir() + "pearl_agent.safetensors";
  net.save(path);
  PearlOptions loaded;
  PearlNetwork back = PearlNetwork::load(path, loaded);
  EXPECT_EQ(loaded.hidden, 16);
  EXPECT_EQ(loaded.heads, 2);
  Program p = benchmark("mvt", Size::Small);
  GraphEncoder enc(p);
  const LoopGraph g = enc.encode(Schedule::original(p), 0);
  std::vector<float> l1, l2;
  float v1, v2;
  net.forward(g, l1, v1);
  back.forward(g, l2, v2);
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(v1, v2);
  nn::save(path, {{"x", HostTensor(DType::Float32, {1})}});
  EXPECT_THROW(PearlNetwork::load(path, loaded), UserError);
}

// The policy head starts with each kind of transformation as probable as "next".
TEST(Pearl, PolicyStartsUniformOverKinds) {
  PearlOptions o = tiny();
  o.iterations = 1;
  o.epochs = 1;
  o.pretrain_steps = 0;
  o.imitation_steps = 0;
  o.learning_rate = 1e-9;  // the one update leaves the start as it was
  PearlTraining t = train_pearl(small_programs(1), o);
  std::vector<float> logits;
  float value;
  Program p = benchmark("doitgen", Size::Small);
  GraphEncoder enc(p);
  t.network->forward(enc.encode(Schedule::original(p), 0), logits, value);
  std::map<Kind, double> mass;
  double z = 0;
  for (int a = 0; a < num_actions(); ++a) z += std::exp(logits[a]);
  for (int a = 0; a < num_actions(); ++a) mass[action_space()[a].kind] += std::exp(logits[a]) / z;
  ASSERT_EQ(mass.size(), 7u);
  for (const auto& [kind, m] : mass) EXPECT_NEAR(m, 1.0 / 7, 0.02) << static_cast<int>(kind);
}

TEST(Pearl, ShortTrainingByTempo) {
  std::vector<Program> programs = small_programs(6);
  PearlOptions o = tiny();
  // The demonstrations' targets come from measured run times, so each minibatch's loss is noisy:
  // enough steps for the fit to show through it.
  o.imitation_steps = 80;
  PearlTraining t = train_pearl(programs, o);
  ASSERT_TRUE(t.network);
  EXPECT_EQ(t.illegal_picks, 0);  // the masked policy only picks legal actions
  EXPECT_GT(t.episodes, 0);
  ASSERT_EQ(static_cast<int64_t>(t.pretrain_loss.size()), o.pretrain_steps);
  // The mean of the last quarter of the steps' minibatch losses is below the first quarter's.
  auto falls = [](const std::vector<double>& loss) {
    const size_t n = loss.size() / 4;
    double first = 0, last = 0;
    for (size_t k = 0; k < n; ++k) first += loss[k], last += loss[loss.size() - 1 - k];
    return last < first;
  };
  EXPECT_TRUE(falls(t.pretrain_loss));  // pre-training fits the run times
  // Imitation: one demonstration per branch at least, and the network fits them.
  EXPECT_GE(t.demonstrations, 6);
  ASSERT_EQ(static_cast<int64_t>(t.imitation_loss.size()), o.imitation_steps);
  EXPECT_TRUE(falls(t.imitation_loss)) << ::testing::PrintToString(t.imitation_loss);
  // The first batch's Adam steps lower its PPO loss. (Later batches are no test: the rewards of
  // programs that run for microseconds carry timing noise of several log4 units.)
  ASSERT_EQ(static_cast<int64_t>(t.loss.size()), o.iterations * o.epochs);
  EXPECT_LT(t.loss[o.epochs - 1], t.loss[0]) << ::testing::PrintToString(t.loss);
  EXPECT_GT(t.memo.legality_hits, 0);
  // The trained agent on a benchmark it never saw: legal, and the checksum is kept.
  Evaluator ev(test_options());
  Program p = benchmark("jacobi2d", Size::Small);
  Result r = run_pearl(p, *t.network, o, ev);
  ASSERT_TRUE(r.ok) << r.note;
  const Result base = run_unoptimized(p, ev);
  EXPECT_TRUE(same_checksum(r.checksum, base.checksum)) << r.note;
  // Selecting the fastest schedule of the same greedy episode: a prefix of its transformations,
  // no slower than its end or the original (the timings are memoized in `ev`, so exact).
  PearlOptions sel = o;
  sel.select_measured = true;
  Result s = run_pearl(p, *t.network, sel, ev);
  ASSERT_TRUE(s.ok) << s.note;
  EXPECT_TRUE(same_checksum(s.checksum, base.checksum)) << s.note;
  EXPECT_LE(s.ms, r.ms);
  EXPECT_LE(s.ms, base.ms);
  ASSERT_LE(s.actions.size(), r.actions.size());
  for (size_t k = 0; k < s.actions.size(); ++k)
    EXPECT_EQ(s.actions[k].second.to_string(), r.actions[k].second.to_string());
}

// Without PPO iterations the imitated network is the agent: no episodes, no PPO loss, and it
// plays a benchmark legally.
TEST(Pearl, ImitationOnlyAgent) {
  PearlOptions o = tiny();
  o.iterations = 0;
  o.imitation_steps = 10;
  PearlTraining t = train_pearl(small_programs(2), o);
  ASSERT_TRUE(t.network);
  EXPECT_EQ(t.episodes, 0);
  EXPECT_TRUE(t.loss.empty());
  EXPECT_EQ(static_cast<int64_t>(t.imitation_loss.size()), o.imitation_steps);
  Evaluator ev(test_options());
  Program p = benchmark("mvt", Size::Small);
  const Result r = run_pearl(p, *t.network, o, ev);
  ASSERT_TRUE(r.ok) << r.note;
  EXPECT_TRUE(same_checksum(r.checksum, run_unoptimized(p, ev).checksum));
  o.iterations = -1;
  EXPECT_THROW(train_pearl(small_programs(1), o), UserError);
}

TEST(Pearl, MissingWeightsAreAUserError) {
  PearlOptions o = tiny();
  auto w = random_weights(o, 1);
  w.erase("val.2.bias");
  EXPECT_THROW(PearlNetwork(w, o), UserError);
}

// `tempo loops bench --quick` plays the agent shipped under data/: it loads with the default
// sizes and plays a benchmark, keeping its checksum; a missing or damaged file is a UserError.
TEST(Pearl, ShippedAgentPlays) {
  PearlOptions o;
  const std::string shipped = std::string(TEMPO_SOURCE_DIR) + "/data/loops_agent.safetensors";
  PearlNetwork net = PearlNetwork::load(shipped, o);
  EXPECT_EQ(o.hidden, PearlOptions().hidden);
  EXPECT_EQ(o.heads, PearlOptions().heads);
  Program p = benchmark("mvt", Size::Small);
  RunOptions ro;
  ro.reps = 1;
  Evaluator ev(ro);
  const Result base = run_unoptimized(p, ev);
  const Result r = run_pearl(p, net, o, ev);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(same_checksum(r.checksum, base.checksum));

  const std::string dir = ::testing::TempDir();
  EXPECT_THROW(PearlNetwork::load(dir + "no_such_agent.safetensors", o), UserError);
  std::ifstream in(shipped, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = dir + "cut_agent.safetensors";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_THROW(PearlNetwork::load(cut, o), UserError);
}

}  // namespace
}  // namespace tempo::loops
