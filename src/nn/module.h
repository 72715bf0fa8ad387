// Neural-network modules written as recurrent tensors (TEMPO §3, Fig. 8).
//
// A parameter is state over its update steps, usually the iteration dimension i: a placeholder
// p over (i) with p[0] = init and p[i + 1] = update (set by an optimizer), i.e. a merge cycle in
// the SDG. Nested steps (i, u) update U times per iteration (PPO's epochs and minibatches):
// p[0, 0] = init, p[i, u + 1] = update[i, u] and p[i + 1, 0] = update[i, U - 1].
// Forward passes are plain RT expressions: an input over (b, i, t) times a parameter over (i)
// gives an output over (b, i, t) by domain inference.
//
//   Dim i = ctx.dim("i", "I");
//   nn::MLP pi(ctx, {4, 32, 2}, i, nn::tanh);
//   RT logits = pi(obs);                       // obs over (b, i, t)
//   optim::Adam opt(pi.parameters(), 1e-3);
//   optim::minimize(loss, opt);
//   pi.save("ckpt_{i}.safetensors", (i.var + 1) % 10 == 0);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/tempo.h"

namespace tempo::nn {

// ---- parameters ------------------------------------------------------------------------------

// The points at which parameters are updated, in order: no dimension (constant), one (i) or
// nested ones (i, u), visited lexicographically.
class Steps {
 public:
  Steps() = default;
  Steps(std::nullopt_t) {}                                 // NOLINT
  Steps(const Dim& d) : dims_{d} {}                        // NOLINT
  Steps(const std::optional<Dim>& d);                      // NOLINT
  Steps(std::initializer_list<Dim> dims) : dims_(dims) {}  // NOLINT
  explicit Steps(std::vector<Dim> dims) : dims_(std::move(dims)) {}

  const std::vector<Dim>& dims() const { return dims_; }
  bool empty() const { return dims_.empty(); }
  bool contains(const Dim& d) const;
  std::string str() const;  // "(i, u)"
  // The number of steps before the current one: u + U * i for (i, u).
  Expr count() const;
  // The first step within the current point of `outer` (one of the dims): (i, 0) for (i, u).
  Expr start_of(const Dim& outer) const;
  // A placeholder s over the steps with s at the first step = `first` (no temporal dims).
  RT state(const RT& first, const std::string& name, Loc loc = Loc::current()) const;
  // Defines s at the next step as `value` read at the current one.
  void advance(const RT& s, const RT& value) const;

 private:
  std::vector<Dim> dims_;
};

// A parameter: an RT (the placeholder p, read at the current iteration) plus the handles an
// optimizer and checkpointing need. Copies share the parameter.
class Parameter : public RT {
 public:
  Parameter() = default;
  // p over `steps` with p = init at the first step (init must not vary in any temporal
  // dimension). Without steps the parameter is a constant: its value is init for the whole
  // program.
  Parameter(const RT& init, Steps steps, const std::string& name, Loc loc = Loc::current());

  bool trainable() const;  // has update steps
  const Steps& steps() const;
  const TensorType& type() const;
  const std::string& param_name() const;  // the local name ("weight")
  Loc loc() const;

  // Defines p at the next step as `next` (which varies in the steps' dims or fewer). Once only.
  void set_update(const RT& next, Loc loc = Loc::current()) const;
  bool has_update() const;
  // The value set by set_update (undefined before): the parameter after the update at the
  // current step, e.g. to save the trained parameters after the last iteration.
  const RT& update() const;

  // Makes `value` the initial value instead of init (dtype and shape must match; `source` names
  // where it came from for errors). Can be called until the program is compiled.
  void set_initial(const HostTensor& value, const std::string& source) const;

 private:
  struct State;
  std::shared_ptr<State> st_;
};

std::vector<RT> as_rts(const std::vector<Parameter>& params);

// ---- modules ---------------------------------------------------------------------------------

class Module {
 public:
  // `steps`: where the parameters are updated, e.g. the iteration dimension i; nullopt for
  // constant parameters.
  Module(Context& ctx, Steps steps) : ctx_(&ctx), steps_(std::move(steps)) {}
  virtual ~Module() = default;

  Context& ctx() const { return *ctx_; }
  const Steps& steps() const { return steps_; }

  // Parameters in a stable order (registration order, depth first) with dotted names such as
  // "0.weight".
  std::vector<std::pair<std::string, Parameter>> named_parameters() const;
  std::vector<Parameter> parameters() const;

  // The forward pass. The default throws (containers such as MLP override it).
  virtual RT forward(const RT& x, Loc loc) const;
  RT operator()(const RT& x, Loc loc = Loc::current()) const { return forward(x, loc); }
  // The forward pass with every parameter read at `index` instead of the current point, e.g.
  // acting with the parameters of the start of the iteration: forward_at(steps().start_of(i)).
  RT forward_at(const Expr& index, const RT& x, Loc loc = Loc::current()) const;

  // ---- checkpoints (safetensors) ----
  // Adds a sink that writes every parameter to `path` (safetensors) at each iteration where
  // `condition` holds (e.g. (i + 1) % 10 == 0; undefined: every iteration). "{i}" in the path
  // (any dimension variable in braces) is replaced by the iteration. Writes are atomic.
  void save(const std::string& path, const Expr& condition = Expr(),
            Loc loc = Loc::current()) const;
  // Makes the parameters' initial values the tensors in a safetensors file / a map by name.
  void init_from(const std::string& path);
  void init_from(const std::map<std::string, HostTensor>& tensors,
                 const std::string& source = "the given tensors");

 protected:
  Parameter add_parameter(const std::string& name, const RT& init, Loc loc = Loc::current());
  template <typename M>
  std::shared_ptr<M> add_module(const std::string& name, std::shared_ptr<M> m) {
    children_.emplace_back(name, m);
    return m;
  }

 private:
  Context* ctx_;
  Steps steps_;
  std::vector<std::pair<std::string, Parameter>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

// ---- activations (elementwise) ---------------------------------------------------------------

using Activation = std::function<RT(const RT&)>;
RT identity(const RT& x);
RT tanh(const RT& x);
RT relu(const RT& x);
RT sigmoid(const RT& x);
RT gelu(const RT& x);  // tanh approximation (torch's approximate="tanh")
RT silu(const RT& x);

// ---- layers ----------------------------------------------------------------------------------

// y = x W^T + b with W (out, in). Default init as PyTorch: U(-1/sqrt(in), 1/sqrt(in)) for both;
// orthogonal init (with `gain`) for the weight and zeros for the bias on request.
class Linear : public Module {
 public:
  enum class Init { Default, Orthogonal };
  Linear(Context& ctx, int64_t in, int64_t out, Steps steps, bool bias = true,
         Init init = Init::Default, double gain = 1.0, Loc loc = Loc::current());
  RT forward(const RT& x, Loc loc) const override;
  const Parameter& weight() const { return weight_; }
  const Parameter& bias() const { return bias_; }  // undefined without bias
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }

 private:
  int64_t in_, out_;
  Parameter weight_, bias_;
};

// Linear layers named "0", "1", ... with `activation` between them and `output_activation`
// after the last. With orthogonal init the hidden layers have gain sqrt(2) and the last one
// `output_gain` (CleanRL's PPO: 0.01 for a policy's logits or mean, 1 for a value).
class MLP : public Module {
 public:
  MLP(Context& ctx, std::vector<int64_t> sizes, Steps steps, Activation activation = nn::tanh,
      Activation output_activation = nn::identity, bool bias = true,
      Linear::Init init = Linear::Init::Default, double output_gain = std::numbers::sqrt2,
      Loc loc = Loc::current());
  RT forward(const RT& x, Loc loc) const override;
  const std::vector<std::shared_ptr<Linear>>& layers() const { return layers_; }

 private:
  std::vector<std::shared_ptr<Linear>> layers_;
  Activation act_, out_act_;
};

// Normalizes over the last dimension (size `size`): (x - mean) / sqrt(var + eps) * w + b.
class LayerNorm : public Module {
 public:
  LayerNorm(Context& ctx, int64_t size, Steps steps, double eps = 1e-5, bool affine = true,
            Loc loc = Loc::current());
  RT forward(const RT& x, Loc loc) const override;

 private:
  double eps_;
  Parameter weight_, bias_;
};

// x / sqrt(mean(x^2) + eps) * w over the last dimension.
class RMSNorm : public Module {
 public:
  RMSNorm(Context& ctx, int64_t size, Steps steps, double eps = 1e-6, bool affine = true,
          Loc loc = Loc::current());
  RT forward(const RT& x, Loc loc) const override;

 private:
  double eps_;
  Parameter weight_;
};

// Rows of a (num, size) table, N(0, 1) init; indices of any shape (int64) give (..., size).
class Embedding : public Module {
 public:
  Embedding(Context& ctx, int64_t num, int64_t size, Steps steps, Loc loc = Loc::current());
  RT forward(const RT& indices, Loc loc) const override;
  const Parameter& weight() const { return weight_; }

 private:
  int64_t num_, size_;
  Parameter weight_;
};

// 2-D convolution of (N, C, H, W) inputs with square kernels; PyTorch's default init.
class Conv2d : public Module {
 public:
  Conv2d(Context& ctx, int64_t in_channels, int64_t out_channels, int64_t kernel, Steps steps,
         int64_t stride = 1, int64_t padding = 0, bool bias = true, Loc loc = Loc::current());
  RT forward(const RT& x, Loc loc) const override;
  const Parameter& weight() const { return weight_; }
  const Parameter& bias() const { return bias_; }

 private:
  int64_t out_, stride_, padding_;
  Parameter weight_, bias_;
};

}  // namespace tempo::nn
