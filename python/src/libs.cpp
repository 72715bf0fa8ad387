// The libraries in Python: tempo.nn (modules, distributions), tempo.optim (optimizers) and
// tempo.rl (training, with environments written in Python).
#include <pybind11/iostream.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <numbers>

#include "bindings.h"
#include "driver/compile.h"
#include "nn/distributions.h"
#include "nn/module.h"
#include "optim/optim.h"
#include "rl/algorithms/algorithms.h"
#include "rl/envs/normalize.h"

namespace tempo::python {
namespace {

std::string type_name(py::handle h) {
  return py::str(py::type::of(h).attr("__name__"));
}

// None, one dimension, or a sequence of them (tempo.Dim or its variable).
nn::Steps to_steps(const Context& ctx, py::handle h) {
  if (h.is_none()) return nn::Steps();
  return nn::Steps(to_dims(ctx, h));
}

// An activation by name ("tanh", "relu", ...) or a Python callable from RT to RT.
nn::Activation to_activation(py::handle h) {
  if (py::isinstance<py::str>(h)) {
    const std::string name = h.cast<std::string>();
    const std::vector<std::pair<const char*, nn::Activation>> table = {
        {"identity", nn::identity}, {"tanh", nn::tanh}, {"relu", nn::relu},
        {"sigmoid", nn::sigmoid},   {"gelu", nn::gelu}, {"silu", nn::silu}};
    for (const auto& [n, f] : table)
      if (name == n) return f;
    throw UserError(cat("unknown activation '", name,
                        "' (identity, tanh, relu, sigmoid, gelu, silu, or a function)"));
  }
  auto fn = std::make_shared<PyRef>(py::reinterpret_borrow<py::object>(h));
  return [fn](const RT& x) {  // called while the program is built, with the GIL held
    return fn->get()(x).cast<RT>();
  };
}

nn::Linear::Init to_init(const std::string& s) {
  if (s == "default") return nn::Linear::Init::Default;
  if (s == "orthogonal") return nn::Linear::Init::Orthogonal;
  throw UserError(cat("unknown init '", s, "' (default or orthogonal)"));
}

optim::LearningRate to_lr(py::handle h) {
  if (py::isinstance<RT>(h)) return optim::LearningRate(h.cast<RT>());
  return optim::LearningRate(h.cast<double>());
}

// ---- environments written in Python -----------------------------------------------------------

// A Gymnasium-style batched environment written in Python: observation_space and action_space
// describe one copy (an object with `n` for a discrete space; `shape` and optionally `low` and
// `high` for a box); reset(seed) returns observations (num_envs, *obs_shape) and
// step(actions) returns (obs, reward, terminated, truncated) or the same with final_obs. The
// env resets copies whose episode ended itself; final_obs holds their last observations (for
// bootstrapping at truncation; without it the reset observation stands in).
class PythonEnv final : public rl::BatchedEnv {
 public:
  PythonEnv(py::object env, int64_t num_envs) : rl::BatchedEnv(num_envs), name_(type_name(env)) {
    obs_ = space(env.attr("observation_space"), "observation_space");
    act_ = space(env.attr("action_space"), "action_space");
    if (obs_.discrete) fail("observation_space must be a box (with a shape), not discrete");
    env_ = std::make_shared<PyRef>(std::move(env));
  }

  const rl::Space& observation_space() const override { return obs_; }
  const rl::Space& action_space() const override { return act_; }
  std::string name() const override { return name_; }

  std::vector<float> reset(uint64_t seed) override {
    py::gil_scoped_acquire gil;
    try {
      py::object obs = env_->get().attr("reset")(seed);
      started_ = true;
      returns_.assign(static_cast<size_t>(num_envs()), 0.0f);
      lengths_.assign(static_cast<size_t>(num_envs()), 0);
      return floats(obs, obs_.shape, "reset() observations");
    } catch (py::error_already_set& e) {
      raise_from_callback(e, cat("environment ", name_, ".reset"));
    }
  }

  void step_into(const std::vector<float>& actions, rl::StepResult& out) override {
    check_step(actions, started_);
    py::gil_scoped_acquire gil;
    try {
      const int64_t n = num_envs();
      py::array a;
      if (act_.discrete) {
        py::array_t<int64_t> d({n});
        for (int64_t k = 0; k < n; ++k) d.mutable_at(k) = static_cast<int64_t>(actions[k]);
        a = d;
      } else {
        std::vector<py::ssize_t> shape{n};
        for (int64_t s : act_.shape) shape.push_back(s);
        py::array_t<float> c(shape);
        std::copy(actions.begin(), actions.end(), c.mutable_data());
        a = c;
      }
      py::object r = env_->get().attr("step")(a);
      py::tuple t = py::isinstance<py::tuple>(r) ? r.cast<py::tuple>() : py::tuple();
      if (t.size() != 4 && t.size() != 5)
        fail("step() must return (obs, reward, terminated, truncated) or those and final_obs");
      out.obs = floats(t[0], obs_.shape, "step() observations");
      out.reward = floats(t[1], {}, "step() rewards");
      std::vector<float> term = floats(t[2], {}, "step() terminated");
      std::vector<float> trunc = floats(t[3], {}, "step() truncated");
      out.terminated.assign(static_cast<size_t>(n), 0);
      out.truncated.assign(static_cast<size_t>(n), 0);
      out.episode_return.assign(static_cast<size_t>(n), 0.0f);
      out.episode_length.assign(static_cast<size_t>(n), 0);
      bool any_done = false;
      for (int64_t k = 0; k < n; ++k) {
        out.terminated[k] = term[k] != 0.0f;
        out.truncated[k] = trunc[k] != 0.0f;
        returns_[k] += out.reward[k];
        lengths_[k] += 1;
        if (out.terminated[k] || out.truncated[k]) {
          any_done = true;
          out.episode_return[k] = returns_[k];
          out.episode_length[k] = lengths_[k];
          returns_[k] = 0.0f;
          lengths_[k] = 0;
        }
      }
      out.final_obs.clear();
      if (any_done)
        out.final_obs = t.size() == 5 ? floats(t[4], obs_.shape, "step() final_obs") : out.obs;
    } catch (py::error_already_set& e) {
      raise_from_callback(e, cat("environment ", name_, ".step"));
    }
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw UserError(cat("environment ", name_, ": ", msg));
  }

  rl::Space space(py::handle s, const char* what) const {
    rl::Space out;
    if (py::hasattr(s, "n")) {
      out.discrete = true;
      out.n = s.attr("n").cast<int64_t>();
      if (out.n < 1) fail(cat(what, ".n must be positive"));
      return out;
    }
    if (!py::hasattr(s, "shape")) fail(cat(what, " needs `n` (discrete) or `shape` (a box)"));
    out.shape = s.attr("shape").cast<std::vector<int64_t>>();
    const int64_t numel = out.numel();
    auto bounds = [&](const char* attr, float fallback) {
      if (!py::hasattr(s, attr) || s.attr(attr).is_none())
        return std::vector<float>(static_cast<size_t>(numel), fallback);
      py::module_ np = py::module_::import("numpy");
      py::object b = np.attr("broadcast_to")(s.attr(attr), py::tuple(py::cast(out.shape)));
      HostTensor h = to_host(np.attr("ravel")(b), DType::Float32);
      return std::vector<float>(h.ptr<float>(), h.ptr<float>() + h.numel());
    };
    out.low = bounds("low", -std::numeric_limits<float>::infinity());
    out.high = bounds("high", std::numeric_limits<float>::infinity());
    return out;
  }

  // A value of shape (num_envs, *per_env) as floats, or a UserError naming what is wrong.
  std::vector<float> floats(py::handle h, const std::vector<int64_t>& per_env,
                            const char* what) const {
    HostTensor t = to_host(h, DType::Float32);
    std::vector<int64_t> want{num_envs()};
    want.insert(want.end(), per_env.begin(), per_env.end());
    if (t.shape != want) {
      Shape got, expected;
      for (int64_t d : t.shape) got.dims.emplace_back(d);
      for (int64_t d : want) expected.dims.emplace_back(d);
      fail(cat(what, " have shape ", got.str(), ", expected ", expected.str()));
    }
    return std::vector<float>(t.ptr<float>(), t.ptr<float>() + t.numel());
  }

  std::string name_;
  rl::Space obs_, act_;
  std::shared_ptr<PyRef> env_;
  bool started_ = false;
  std::vector<float> returns_;
  std::vector<int64_t> lengths_;
};

// A keyword of tempo.rl.train that sets TrainConfig::compile as Context.compile's keyword does.
Keyword<rl::TrainConfig> compile_keyword(const char* name) {
  for (const Keyword<CompileOptions>& w : compile_keywords())
    if (std::string(w.name) == name)
      return {name, [set = w.set](rl::TrainConfig& c, py::handle value) { set(c.compile, value); }};
  internal_error(cat("compile() has no keyword '", name, "'"));
}

// The keyword arguments of tempo.rl.train, in the order its errors list them.
const std::vector<Keyword<rl::TrainConfig>>& train_keywords() {
  using C = rl::TrainConfig;
  static const std::vector<Keyword<C>> table = {
      compile_keyword("seed"),
      keyword("iterations", &C::iterations),
      keyword("num_envs", &C::num_envs),
      keyword("steps", &C::steps),
      keyword("lr", &C::lr),
      keyword("lr_decay", &C::lr_decay),
      keyword("orthogonal_init", &C::orthogonal_init),
      keyword("truncation", &C::truncation),
      keyword("normalize_observations", &C::normalize_observations),
      keyword("normalize_rewards", &C::normalize_rewards),
      keyword("gamma", &C::gamma),
      keyword("gae_lambda", &C::gae_lambda),
      keyword("ent_coef", &C::ent_coef),
      keyword("vf_coef", &C::vf_coef),
      keyword("max_grad_norm", &C::max_grad_norm),
      keyword("clip", &C::clip),
      keyword("epochs", &C::epochs),
      keyword("minibatches", &C::minibatches),
      keyword("n_step", &C::n_step),
      keyword("normalize_returns", &C::normalize_returns),
      keyword("per_step", &C::per_step),
      keyword("buffer_size", &C::buffer_size),
      keyword("batch_size", &C::batch_size),
      keyword("learning_starts", &C::learning_starts),
      keyword("target_every", &C::target_every),
      keyword("eps_start", &C::eps_start),
      keyword("eps_end", &C::eps_end),
      keyword("exploration_fraction", &C::exploration_fraction),
      keyword("policy_lr", &C::policy_lr),
      keyword("tau", &C::tau),
      keyword("exploration_noise", &C::exploration_noise),
      keyword("policy_noise", &C::policy_noise),
      keyword("noise_clip", &C::noise_clip),
      keyword("policy_every", &C::policy_every),
      keyword("warm_up", &C::warm_up),
      {"hidden",  // one width for every hidden layer, or the layers' widths
       [](C& c, py::handle v) {
         if (py::isinstance<py::int_>(v))
           c.set_hidden_width(v.cast<int64_t>());
         else
           c.hidden = v.cast<std::vector<int64_t>>();
       }},
      {"layers", [](C& c, py::handle v) { c.set_hidden_layers(v.cast<int64_t>()); }},
      keyword("optimizer", &C::optimizer),
      compile_keyword("verbose"),
      compile_keyword("codegen"),
      compile_keyword("profile"),
      compile_keyword("device"),
      compile_keyword("memory_budget"),
      keyword("save_dir", &C::save_dir),
      keyword("save_every", &C::save_every),
      keyword("resume_dir", &C::resume_dir),
      {"obs_shape",
       [](C& c, py::handle value) {
         c.env_options.obs_shape = value.cast<std::vector<int64_t>>();
       }},
      {"episode_length",
       [](C& c, py::handle value) { c.env_options.episode_length = value.cast<int64_t>(); }},
      {"distributed",  // one rank of a job started by `tempo launch` or torchrun
       [](C& c, py::handle value) {
         if (value.cast<bool>()) c.compile.communicator = connect(DistributedConfig::from_env());
       }},
  };
  return table;
}

// tempo.rl.train(algo, env=..., **config): the TrainConfig fields by name.
rl::TrainConfig train_config(const std::string& algo, py::handle env, const py::kwargs& kw) {
  rl::TrainConfig c = rl::TrainConfig::defaults(algo);
  if (py::isinstance<py::str>(env)) {
    c.env = env.cast<std::string>();
  } else {  // a factory: num_envs -> env (a class whose constructor takes num_envs works)
    c.env =
        py::hasattr(env, "__name__") ? std::string(py::str(env.attr("__name__"))) : type_name(env);
    auto factory = std::make_shared<PyRef>(py::reinterpret_borrow<py::object>(env));
    c.make_env = [factory](int64_t n) -> std::unique_ptr<rl::BatchedEnv> {
      py::gil_scoped_acquire gil;
      try {
        return std::make_unique<PythonEnv>(factory->get()(n), n);
      } catch (py::error_already_set& e) {
        raise_from_callback(e, "the environment factory");
      }
    };
  }
  set_keywords(train_keywords(), kw, c, "train");
  return c;
}

// Parameters, modules and activations.
void bind_nn_modules(py::module_& nn) {
  py::class_<nn::Parameter, RT>(nn, "Parameter",
                                "A parameter: state over its update steps (e.g. the iteration "
                                "dimension), p[0] = init and p[i + 1] = the optimizer's update.")
      .def(py::init([](const RT& init, py::handle steps, const std::string& name) {
             return nn::Parameter(init, to_steps(init.ctx(), steps), name);
           }),
           py::arg("init"), py::arg("steps") = py::none(), py::arg("name") = "param", guard(),
           self_keeps_arg)
      .def_property_readonly("trainable", &nn::Parameter::trainable)
      .def_property_readonly("param_name", &nn::Parameter::param_name)
      .def(
          "set_update", [](const nn::Parameter& p, const RT& next) { p.set_update(next); }, guard())
      .def("set_initial", [](const nn::Parameter& p, py::handle value) {
        p.set_initial(to_host(value, p.type().dtype), "a NumPy array");
      });

  py::class_<nn::Module, std::shared_ptr<nn::Module>>(nn, "Module")
      .def(
          "__call__", [](const nn::Module& mod, const RT& x) { return mod(x); }, guard(),
          py::keep_alive<0, 2>())
      .def(
          "forward_at",
          [](const nn::Module& mod, py::handle index, const RT& x) {
            return mod.forward_at(to_expr(index), x);
          },
          guard(), py::keep_alive<0, 3>(),
          "The forward pass with every parameter read at `index` instead of the current point.")
      .def("parameters", &nn::Module::parameters)
      .def("named_parameters", &nn::Module::named_parameters)
      .def(
          "save",
          [](const nn::Module& mod, const std::string& path, py::handle condition) {
            mod.save(path, condition.is_none() ? Expr() : to_expr(condition));
          },
          py::arg("path"), py::arg("condition") = py::none(), guard(),
          "Writes the parameters to `path` (safetensors) at each iteration where `condition` "
          "holds; '{i}' in the path is replaced by the iteration.")
      .def(
          "init_from", [](nn::Module& mod, const std::string& path) { mod.init_from(path); },
          "Makes the parameters' initial values the tensors of a safetensors file.");

  py::class_<nn::Linear, nn::Module, std::shared_ptr<nn::Linear>>(nn, "Linear")
      .def(py::init([](Context& c, int64_t in, int64_t out, py::handle steps, bool bias,
                       const std::string& init, double gain) {
             return std::make_shared<nn::Linear>(c, in, out, to_steps(c, steps), bias,
                                                 to_init(init), gain);
           }),
           py::arg("ctx"), py::arg("in_features"), py::arg("out_features"),
           py::arg("steps") = py::none(), py::arg("bias") = true, py::arg("init") = "default",
           py::arg("gain") = 1.0, guard(), self_keeps_arg)
      .def_property_readonly("weight", &nn::Linear::weight)
      .def_property_readonly("bias", &nn::Linear::bias);
  py::class_<nn::MLP, nn::Module, std::shared_ptr<nn::MLP>>(nn, "MLP").def(
      py::init([](Context& c, std::vector<int64_t> sizes, py::handle steps, py::handle activation,
                  py::handle output_activation, bool bias, const std::string& init,
                  double output_gain) {
        return std::make_shared<nn::MLP>(
            c, std::move(sizes), to_steps(c, steps), to_activation(activation),
            to_activation(output_activation), bias, to_init(init), output_gain);
      }),
      py::arg("ctx"), py::arg("sizes"), py::arg("steps") = py::none(),
      py::arg("activation") = "tanh", py::arg("output_activation") = "identity",
      py::arg("bias") = true, py::arg("init") = "default",
      py::arg("output_gain") = std::numbers::sqrt2, guard(), self_keeps_arg);
  py::class_<nn::LayerNorm, nn::Module, std::shared_ptr<nn::LayerNorm>>(nn, "LayerNorm")
      .def(py::init([](Context& c, int64_t size, py::handle steps, double eps, bool affine) {
             return std::make_shared<nn::LayerNorm>(c, size, to_steps(c, steps), eps, affine);
           }),
           py::arg("ctx"), py::arg("size"), py::arg("steps") = py::none(), py::arg("eps") = 1e-5,
           py::arg("affine") = true, guard(), self_keeps_arg);
  py::class_<nn::RMSNorm, nn::Module, std::shared_ptr<nn::RMSNorm>>(nn, "RMSNorm")
      .def(py::init([](Context& c, int64_t size, py::handle steps, double eps, bool affine) {
             return std::make_shared<nn::RMSNorm>(c, size, to_steps(c, steps), eps, affine);
           }),
           py::arg("ctx"), py::arg("size"), py::arg("steps") = py::none(), py::arg("eps") = 1e-6,
           py::arg("affine") = true, guard(), self_keeps_arg);
  py::class_<nn::Embedding, nn::Module, std::shared_ptr<nn::Embedding>>(nn, "Embedding")
      .def(py::init([](Context& c, int64_t num, int64_t size, py::handle steps) {
             return std::make_shared<nn::Embedding>(c, num, size, to_steps(c, steps));
           }),
           py::arg("ctx"), py::arg("num"), py::arg("size"), py::arg("steps") = py::none(), guard(),
           self_keeps_arg);
  py::class_<nn::Conv2d, nn::Module, std::shared_ptr<nn::Conv2d>>(nn, "Conv2d")
      .def(py::init([](Context& c, int64_t in, int64_t out, int64_t kernel, py::handle steps,
                       int64_t stride, int64_t padding, bool bias) {
             return std::make_shared<nn::Conv2d>(c, in, out, kernel, to_steps(c, steps), stride,
                                                 padding, bias);
           }),
           py::arg("ctx"), py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel"),
           py::arg("steps") = py::none(), py::arg("stride") = 1, py::arg("padding") = 0,
           py::arg("bias") = true, guard(), self_keeps_arg);

  nn.def("identity", &nn::identity, guard(), keep_ctx);
  nn.def("tanh", &nn::tanh, guard(), keep_ctx);
  nn.def("relu", &nn::relu, guard(), keep_ctx);
  nn.def("sigmoid", &nn::sigmoid, guard(), keep_ctx);
  nn.def("gelu", &nn::gelu, guard(), keep_ctx);
  nn.def("silu", &nn::silu, guard(), keep_ctx);
}

void bind_distributions(py::module_& nn) {
  py::class_<nn::Categorical>(nn, "Categorical",
                              "A categorical distribution over the last dimension of logits.")
      .def(py::init([](const RT& logits) { return nn::Categorical(logits); }), guard(),
           self_keeps_arg)
      .def_property_readonly("logits", &nn::Categorical::logits)
      .def(
          "probs", [](const nn::Categorical& d) { return d.probs(); }, guard(), keep_ctx)
      .def(
          "sample", [](const nn::Categorical& d) { return d.sample(); }, guard(), keep_ctx)
      .def(
          "log_prob", [](const nn::Categorical& d, const RT& a) { return d.log_prob(a); }, guard(),
          keep_ctx)
      .def(
          "entropy", [](const nn::Categorical& d) { return d.entropy(); }, guard(), keep_ctx);
  py::class_<nn::Normal>(nn, "Normal", "A diagonal normal distribution.")
      .def(py::init([](const RT& mean, const RT& log_std) { return nn::Normal(mean, log_std); }),
           guard(), self_keeps_arg)
      .def_property_readonly("mean", &nn::Normal::mean)
      .def_property_readonly("log_std", &nn::Normal::log_std)
      .def(
          "sample", [](const nn::Normal& d) { return d.sample(); }, guard(), keep_ctx)
      .def(
          "rsample", [](const nn::Normal& d) { return d.rsample(); }, guard(), keep_ctx)
      .def(
          "log_prob", [](const nn::Normal& d, const RT& x) { return d.log_prob(x); }, guard(),
          keep_ctx)
      .def(
          "entropy", [](const nn::Normal& d) { return d.entropy(); }, guard(), keep_ctx);
}

void bind_optim(py::module_& m) {
  py::module_ op = m.def_submodule("optim", "Optimizers as recurrences over parameters' steps.");
  py::class_<optim::Optimizer, std::shared_ptr<optim::Optimizer>>(op, "Optimizer")
      .def(
          "step", [](optim::Optimizer& o, const std::vector<RT>& grads) { o.step(grads); }, guard(),
          "Defines every parameter's next value from its gradient (once).")
      .def_property_readonly("params", &optim::Optimizer::params);
  py::class_<optim::SGD, optim::Optimizer, std::shared_ptr<optim::SGD>>(op, "SGD").def(
      py::init([](std::vector<nn::Parameter> params, py::handle lr, double momentum,
                  double weight_decay, bool nesterov) {
        return std::make_shared<optim::SGD>(std::move(params), to_lr(lr), momentum, weight_decay,
                                            nesterov);
      }),
      py::arg("params"), py::arg("lr"), py::arg("momentum") = 0.0, py::arg("weight_decay") = 0.0,
      py::arg("nesterov") = false, guard());
  auto adam = [](auto tag, const char* name, double default_decay, py::module_& mod) {
    using A = typename decltype(tag)::type;
    py::class_<A, optim::Optimizer, std::shared_ptr<A>>(mod, name).def(
        py::init([](std::vector<nn::Parameter> params, py::handle lr,
                    std::pair<double, double> betas, double eps, double weight_decay) {
          return std::make_shared<A>(std::move(params), to_lr(lr), betas.first, betas.second, eps,
                                     weight_decay);
        }),
        py::arg("params"), py::arg("lr") = 1e-3, py::arg("betas") = std::make_pair(0.9, 0.999),
        py::arg("eps") = 1e-8, py::arg("weight_decay") = default_decay, guard());
  };
  adam(std::type_identity<optim::Adam>(), "Adam", 0.0, op);
  adam(std::type_identity<optim::AdamW>(), "AdamW", 1e-2, op);
  op.def(
      "minimize",
      [](const RT& loss, optim::Optimizer& o, double max_grad_norm) {
        optim::minimize(loss, o, max_grad_norm);
      },
      py::arg("loss"), py::arg("optimizer"), py::arg("max_grad_norm") = 0.0, guard(),
      "Gradients of loss with respect to the optimizer's parameters (clipped to a global "
      "norm if max_grad_norm > 0), then optimizer.step.");
  op.def(
      "clip_grad_norm",
      [](py::object grads, double max_norm) {
        RT norm;
        std::vector<RT> clipped =
            optim::clip_grad_norm(grads.cast<std::vector<RT>>(), max_norm, &norm);
        return py::make_tuple(keeping(py::cast(clipped), grads), keeping(py::cast(norm), grads));
      },
      py::arg("grads"), py::arg("max_norm"), guard(),
      "(clipped gradients, their norm before clipping).");
  op.def(
      "linear_decay",
      [](Context& c, double base, double end, py::handle i, py::handle n) {
        return optim::linear_decay(c, base, end, to_expr(i), to_expr(n));
      },
      guard(), keep_ctx);
  op.def(
      "exponential_decay",
      [](Context& c, double base, double gamma, py::handle i) {
        return optim::exponential_decay(c, base, gamma, to_expr(i));
      },
      guard(), keep_ctx);
}

// A float32 NumPy array of shape (num_envs, *per_env) holding `v`.
py::array_t<float> env_rows(const std::vector<float>& v, int64_t n,
                            const std::vector<int64_t>& per_env) {
  std::vector<py::ssize_t> shape{n};
  for (int64_t s : per_env) shape.push_back(s);
  py::array_t<float> a(shape);
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

py::array_t<bool> env_flags(const std::vector<uint8_t>& v) {
  py::array_t<bool> a({static_cast<py::ssize_t>(v.size())});
  for (size_t k = 0; k < v.size(); ++k) a.mutable_at(k) = v[k] != 0;
  return a;
}

// tempo.rl.make_env: a built-in environment stepped from Python (to compare it with another
// implementation, or to drive it outside training).
void bind_envs(py::module_& rl) {
  py::class_<rl::BatchedEnv>(rl, "BuiltinEnv",
                             "num_envs copies of a built-in environment, stepped in lockstep; a "
                             "copy whose episode ends resets itself.")
      .def_property_readonly("name", &rl::BatchedEnv::name)
      .def_property_readonly("num_envs", &rl::BatchedEnv::num_envs)
      .def_property_readonly("observation_shape",
                             [](const rl::BatchedEnv& e) { return e.observation_space().shape; })
      .def(
          "reset",
          [](rl::BatchedEnv& e, uint64_t seed) {
            return env_rows(e.reset(seed), e.num_envs(), e.observation_space().shape);
          },
          py::arg("seed"), "Starts every copy (copy i seeded with seed + i): obs.")
      .def(
          "step",
          [](rl::BatchedEnv& e, py::handle actions) {
            HostTensor a = to_host(py::module_::import("numpy").attr("ravel")(actions),
                                   DType::Float32);
            rl::StepResult r = e.step(std::vector<float>(a.ptr<float>(),
                                                         a.ptr<float>() + a.numel()));
            const std::vector<int64_t>& shape = e.observation_space().shape;
            py::object final_obs = py::none();
            if (!r.final_obs.empty()) final_obs = env_rows(r.final_obs, e.num_envs(), shape);
            return py::make_tuple(env_rows(r.obs, e.num_envs(), shape),
                                  env_rows(r.reward, e.num_envs(), {}),
                                  env_flags(r.terminated), env_flags(r.truncated), final_obs);
          },
          py::arg("actions"),
          "(obs, reward, terminated, truncated, final_obs): final_obs is None when no episode "
          "ended, else the last observations of those that did (other rows equal obs).")
      .def("state", &rl::BatchedEnv::state, "The whole state as text (what a checkpoint keeps).")
      .def("set_state", &rl::BatchedEnv::set_state, py::arg("text"),
           "Restores a state() exactly.");
  rl.def(
      "make_env",
      [](const std::string& name, int64_t num_envs, bool normalize_observations,
         bool normalize_rewards, double gamma) {
        return rl::normalize(rl::make_env(name, num_envs),
                             {normalize_observations, normalize_rewards, gamma});
      },
      py::arg("name"), py::arg("num_envs") = 1, py::arg("normalize_observations") = false,
      py::arg("normalize_rewards") = false, py::arg("gamma") = 0.99,
      "A built-in environment by name (env_names()), its observations and rewards normalized "
      "as TrainConfig's normalize_observations and normalize_rewards do.");
}

void bind_rl(py::module_& m) {
  py::module_ rl = m.def_submodule("rl", "Reinforcement learning: REINFORCE, A2C and PPO.");
  py::class_<rl::TrainResult>(rl, "TrainResult")
      .def_property_readonly(
          "curve",
          [](const rl::TrainResult& r) {
            py::list out;
            for (const rl::CurvePoint& p : r.curve)
              out.append(py::make_tuple(p.env_steps, p.mean_return));
            return out;
          },
          "(env_steps, mean return of the last 20 episodes) per iteration")
      .def_readonly("final_mean_return", &rl::TrainResult::final_mean_return)
      .def_readonly("compile_seconds", &rl::TrainResult::compile_seconds)
      .def_readonly("run_seconds", &rl::TrainResult::run_seconds)
      .def_readonly("episodes", &rl::TrainResult::episodes)
      .def_readonly("launches", &rl::TrainResult::launches)
      .def_readonly("peak_tracked_bytes", &rl::TrainResult::peak_tracked_bytes)
      .def_readonly("iteration_seconds", &rl::TrainResult::iteration_seconds)
      .def_readonly("profile", &rl::TrainResult::profile)
      .def_readonly("collectives", &rl::TrainResult::collectives)
      .def_readonly("collective_seconds", &rl::TrainResult::collective_seconds);
  rl.def(
      "train",
      [](const std::string& algo, py::handle env, bool log, py::kwargs kw) {
        py::object callback = py::none();
        if (kw.contains("on_iteration")) {
          callback = kw["on_iteration"];
          PyDict_DelItemString(kw.ptr(), "on_iteration");
        }
        rl::TrainConfig c = train_config(algo, env, kw);
        // After each iteration: Ctrl-C stops training (KeyboardInterrupt reaches the caller),
        // and the user's callback sees the curve so far.
        auto cb = callback.is_none() ? nullptr : std::make_shared<PyRef>(callback);
        c.on_iteration = [cb](const std::vector<rl::CurvePoint>& curve) {
          py::gil_scoped_acquire gil;
          try {
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            if (!cb) return;
            py::list points;
            for (const rl::CurvePoint& p : curve)
              points.append(py::make_tuple(p.env_steps, p.mean_return));
            cb->get()(points);
          } catch (py::error_already_set& e) {
            raise_from_callback(e, "training");
          }
        };
        // Progress goes to Python's sys.stdout (a notebook shows it), flushed per line.
        py::detail::pythonbuf buf(py::module_::import("sys").attr("stdout"));
        std::ostream out(&buf);
        return without_gil([&] { return rl::train(c, log ? &out : nullptr); });
      },
      py::arg("algo"), py::arg("env") = "CartPole-v1", py::arg("log") = true, guard(),
      "Trains a policy with 'reinforce', 'a2c' or 'ppo' on a built-in environment (by "
      "name) or a Python one (a factory num_envs -> env, e.g. its class). on_iteration: "
      "called after each iteration with the curve so far. Options are "
      "TrainConfig's fields (iterations, num_envs, steps, lr, ...).");
  rl.def("env_names", &rl::env_names, "The built-in environments.");
  bind_envs(rl);
}

}  // namespace

void bind_libs(py::module_& m) {
  py::module_ nn = m.def_submodule("nn", "Neural-network modules written as recurrent tensors.");
  bind_nn_modules(nn);
  bind_distributions(nn);
  bind_optim(m);
  bind_rl(m);
}

}  // namespace tempo::python
