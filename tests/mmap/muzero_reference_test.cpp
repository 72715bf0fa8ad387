// The networks' CPU inference (what the search calls) against LibTorch eager over the same
// weights: the learner trains nn::MLPs (Linear, ReLU, tanh latents), and the search must see
// exactly those functions.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "mmap/muzero.h"
#include "mmap/test_instances.h"
#include "nn/safetensors.h"

namespace tempo::mmap {
namespace {

using namespace fixtures;

torch::Tensor tensor(const HostTensor& h) {
  return torch::from_blob(const_cast<uint8_t*>(h.data.data()), h.shape, torch::kFloat32).clone();
}

// x W0^T + b0, ReLU, x W1^T + b1, as the learner's nn::MLP computes it.
torch::Tensor mlp(const std::map<std::string, HostTensor>& w, const std::string& net,
                  const torch::Tensor& x, bool tanh_out) {
  auto at = [&](const std::string& k) { return tensor(w.at(net + "." + k)); };
  torch::Tensor h = torch::relu(torch::matmul(x, at("0.weight").t()) + at("0.bias"));
  torch::Tensor y = torch::matmul(h, at("1.weight").t()) + at("1.bias");
  return tanh_out ? torch::tanh(y) : y;
}

TEST(MuZeroReference, InferenceMatchesLibTorch) {
  auto inst = synthetic(32, 2.0, 7);
  MuZeroOptions o;
  o.latent = 8;
  o.hidden = 16;
  o.rounds = 1;
  o.steps_per_round = 3;  // a few Adam steps: weights away from their initialization
  o.simulations = 4;
  const MuZeroTraining t = train_muzero(inst, o);
  const std::string path =
      (std::filesystem::temp_directory_path() / "tempo_muzero_reference.safetensors").string();
  t.network->save(path);
  const std::map<std::string, HostTensor> w = nn::load(path);
  std::filesystem::remove(path);
  const double value_scale = inst->total_benefit();
  double reward_scale = 0;
  for (const Buffer& b : inst->buffers) reward_scale = std::max(reward_scale, b.benefit);

  MMapGame g(inst);
  g.step(g.legal_actions().front());
  const std::vector<float> obs = t.network->observation(g);
  std::vector<float> latent;
  const Evaluation e = t.network->initial(g, latent);
  const torch::Tensor x = torch::tensor(obs).unsqueeze(0);
  const torch::Tensor h = mlp(w, "rep", x, true);
  EXPECT_TRUE(torch::allclose(torch::tensor(latent), h.squeeze(0), 1e-5, 1e-5));
  // The heuristic's choice, the observation's last features, adds its learned logit.
  const torch::Tensor hint = x.slice(1, x.size(1) - kNumActions) * tensor(w.at("pol.hint"));
  const torch::Tensor prior = torch::softmax(mlp(w, "pol", h, false) + hint, -1).squeeze(0);
  for (int a = 0; a < kNumActions; ++a) EXPECT_NEAR(e.prior[a], prior[a].item<double>(), 1e-5);
  EXPECT_NEAR(e.value, mlp(w, "val", h, false).item<double>() * value_scale, 1e-5 * value_scale);

  std::vector<float> next;
  double reward = 0;
  const Evaluation n = t.network->recurrent(latent, Action::NoCopy, next, reward);
  const torch::Tensor xa = torch::cat({h, torch::tensor({0.f, 1.f, 0.f}).unsqueeze(0)}, 1);
  const torch::Tensor h2 = mlp(w, "dyn", xa, true);
  EXPECT_TRUE(torch::allclose(torch::tensor(next), h2.squeeze(0), 1e-5, 1e-5));
  EXPECT_NEAR(reward, mlp(w, "rew", xa, false).item<double>() * reward_scale, 1e-5 * reward_scale);
  EXPECT_NEAR(n.value, mlp(w, "val", h2, false).item<double>() * value_scale, 1e-5 * value_scale);
}

}  // namespace
}  // namespace tempo::mmap
