// Parameters as merge cycles over the iteration dimension, modules, layers and checkpoints.
#include "nn/module.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numbers>

#include "api/distributed.h"
#include "nn/init.h"
#include "nn/safetensors.h"
#include "util/error.h"

namespace tempo::nn {

// ---- Steps -----------------------------------------------------------------------------------

Steps::Steps(const std::optional<Dim>& d) {
  if (d) dims_.push_back(*d);
}

bool Steps::contains(const Dim& d) const {
  return std::find(dims_.begin(), dims_.end(), d) != dims_.end();
}

std::string Steps::str() const {
  return dims_str(dims_);
}

Expr Steps::count() const {
  Expr n(0);
  for (const Dim& d : dims_) n = n * d.bound + d.var;
  return n;
}

namespace {
// An index over `dims`: entries[k], as one expression for a single dim.
Expr index_of(std::vector<Expr> entries) {
  return entries.size() == 1 ? entries[0] : seq(std::move(entries));
}
}  // namespace

Expr Steps::start_of(const Dim& outer) const {
  if (!contains(outer))
    throw UserError(cat("start_of(", outer.name(), "): not one of the steps ", str()));
  std::vector<Expr> e;
  bool inner = false;
  for (const Dim& d : dims_) {
    e.push_back(inner ? Expr(0) : d.var);
    inner = inner || d == outer;
  }
  return index_of(e);
}

RT Steps::state(const RT& first, const std::string& name, Loc loc) const {
  if (dims_.empty()) throw UserError(cat("state '", name, "' at ", where(loc), " without steps"));
  RT s = first.ctx().placeholder(TensorType{first.dtype(), first.shape()}, dims_, name, loc);
  s[index_of(std::vector<Expr>(dims_.size(), Expr(0)))] = first;
  return s;
}

void Steps::advance(const RT& s, const RT& value) const {
  // Level k carries into dim k: (d_0 .. d_k + 1, 0 ..) = value at (d_0 .. d_k, B - 1 ..).
  RT target = s;
  for (size_t k = dims_.size(); k-- > 0;) {
    std::vector<Expr> to, from;
    for (size_t j = 0; j < dims_.size(); ++j) {
      if (j < k) {
        to.push_back(dims_[j].var);
        from.push_back(dims_[j].var);
      } else if (j == k) {
        to.push_back(dims_[j].var + 1);
        from.push_back(dims_[j].var);
      } else {
        to.push_back(Expr(0));
        from.push_back(dims_[j].bound - 1);
      }
    }
    bool identity = k + 1 == dims_.size();
    target[index_of(to)] = identity ? value : RT(value[index_of(from)]);
  }
}

// ---- Parameter -------------------------------------------------------------------------------

struct Parameter::State {
  Steps steps;
  TensorType type;
  std::string name;
  Loc loc;
  bool has_update = false;
  RT next;  // the update (set_update)
  // The initial value set by set_initial (read by the init UDF at run time).
  std::mutex mu;
  std::optional<HostTensor> initial;
};

namespace {

std::string type_of(const HostTensor& t) {
  std::string s = cat(ir::dtype_name(t.dtype), "(");
  for (size_t k = 0; k < t.shape.size(); ++k) s += cat(k ? ", " : "", t.shape[k]);
  return s + ")";
}

HostTensor convert(const HostTensor& t, DType dt) {
  if (t.dtype == dt) return t;
  HostTensor out(dt, t.shape);
  for (int64_t k = 0; k < t.numel(); ++k) out.set(k, t.at(k));
  return out;
}

}  // namespace

Parameter::Parameter(const RT& init, Steps steps, const std::string& name, Loc loc) {
  if (!init.defined())
    throw UserError(
        cat("parameter '", name, "' at ", where(loc), ": the initial value is an undefined RT"));
  Context& ctx = init.ctx();
  if (!init.domain().empty())
    throw UserError(cat("parameter '", name, "' at ", where(loc), ": the initial value ",
                        ctx.graph().op(init.op()).describe(), " varies in ",
                        dims_str(init.domain()), "; it must not vary in any dimension"));
  if (!init.shape().is_static())
    throw UserError(cat("parameter '", name, "' at ", where(loc), ": shape ", init.shape().str(),
                        " is not static"));
  auto st = std::make_shared<State>();
  st->steps = steps;
  st->type = TensorType{init.dtype(), init.shape()};
  st->name = name;
  st->loc = loc;
  // The initial value passes through a host function so that set_initial can replace it
  // (checkpoint restore) after the module is built.
  // The state outlives the module if the program does (compiled programs copy the graph).
  auto fn = [st](const std::vector<HostTensor>& in, const std::vector<int64_t>&) {
    {
      std::lock_guard<std::mutex> lock(st->mu);
      if (st->initial) return std::vector<HostTensor>{*st->initial};
    }
    return std::vector<HostTensor>{in[0]};
  };
  RT first = ctx.udf(name + ".init", fn, {init}, {st->type}, {}, loc)[0];
  // Every rank of a data-parallel job starts from rank 0's parameters (a restored checkpoint
  // too), whatever its own initializer drew.
  if (ctx.data_parallel() && !steps.empty()) first = broadcast(first, 0, loc);
  if (!steps.empty()) {
    RT::operator=(steps.state(first, name, loc));
  } else {
    RT::operator=(first);
    named(name);
  }
  st_ = std::move(st);
}

bool Parameter::trainable() const {
  return st_ && !st_->steps.empty();
}

const Steps& Parameter::steps() const {
  if (!st_) throw UserError("use of an undefined parameter");
  return st_->steps;
}

const TensorType& Parameter::type() const {
  if (!st_) throw UserError("use of an undefined parameter");
  return st_->type;
}

const std::string& Parameter::param_name() const {
  if (!st_) throw UserError("use of an undefined parameter");
  return st_->name;
}

Loc Parameter::loc() const {
  return st_ ? st_->loc : Loc::current();
}

bool Parameter::has_update() const {
  return st_ && st_->has_update;
}

void Parameter::set_update(const RT& next, Loc loc) const {
  if (!st_) throw UserError(cat("update at ", where(loc), " of an undefined parameter"));
  if (st_->steps.empty())
    throw UserError(cat("parameter '", st_->name, "' (created at ", where(st_->loc),
                        ") is constant (no iteration dimension) and cannot be updated at ",
                        where(loc)));
  if (st_->has_update)
    throw UserError(cat("parameter '", st_->name, "' (created at ", where(st_->loc),
                        ") already has an update; a second one at ", where(loc)));
  st_->steps.advance(*this, next);
  st_->has_update = true;
  st_->next = next;
}

const RT& Parameter::update() const {
  static const RT none;
  return st_ ? st_->next : none;
}

void Parameter::set_initial(const HostTensor& value, const std::string& source) const {
  if (!st_) throw UserError("set_initial on an undefined parameter");
  const std::vector<int64_t> want = st_->type.shape.static_dims();
  if (value.shape != want)
    throw UserError(cat("parameter '", st_->name, "' (created at ", where(st_->loc), ") has type ",
                        st_->type.str(), " but ", source, " holds ", type_of(value)));
  bool numeric = value.dtype != DType::Bool && st_->type.dtype != DType::Bool;
  if (value.dtype != st_->type.dtype && !numeric)
    throw UserError(cat("parameter '", st_->name, "' has dtype ", ir::dtype_name(st_->type.dtype),
                        " but ", source, " holds ", ir::dtype_name(value.dtype)));
  std::lock_guard<std::mutex> lock(st_->mu);
  st_->initial = convert(value, st_->type.dtype);
}

std::vector<RT> as_rts(const std::vector<Parameter>& params) {
  return std::vector<RT>(params.begin(), params.end());
}

// ---- Module ----------------------------------------------------------------------------------

std::vector<std::pair<std::string, Parameter>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Parameter>> out = params_;
  for (const auto& [name, child] : children_)
    for (auto& [n, p] : child->named_parameters()) out.emplace_back(name + "." + n, p);
  return out;
}

std::vector<Parameter> Module::parameters() const {
  std::vector<Parameter> out;
  for (auto& [n, p] : named_parameters()) out.push_back(p);
  return out;
}

RT Module::forward(const RT& x, Loc loc) const {
  throw UserError(cat("this module has no forward pass (called at ", where(loc), ")"));
}

RT Module::forward_at(const Expr& index, const RT& x, Loc loc) const {
  std::vector<std::pair<RT, RT>> reads;
  for (const Parameter& p : parameters()) reads.emplace_back(p, p[index]);
  ReadSubstitution at(ctx(), std::move(reads));
  return forward(x, loc);
}

Parameter Module::add_parameter(const std::string& name, const RT& init, Loc loc) {
  for (const auto& [n, p] : params_)
    if (n == name)
      throw UserError(cat("parameter name '", name, "' used twice (", where(loc), ")"));
  Parameter p(init, steps_, name, loc);
  params_.emplace_back(name, p);
  return p;
}

void Module::save(const std::string& path, const Expr& condition, Loc loc) const {
  auto named = named_parameters();
  if (named.empty()) throw UserError(cat("save at ", where(loc), ": the module has no parameters"));
  std::vector<RT> inputs;
  std::vector<std::string> names;
  for (const auto& [n, p] : named) {
    RT r = p;
    if (condition.defined()) r = p[condition];
    inputs.push_back(r);
    names.push_back(n);
  }
  Dims domain;
  for (const RT& r : inputs) domain = ctx().domain_union(domain, r.domain());
  auto fn = [path, names, domain](const std::vector<HostTensor>& in,
                                  const std::vector<int64_t>& point) {
    std::string file = path;
    for (size_t k = 0; k < domain.size() && k < point.size(); ++k) {
      const std::string key = "{" + domain[k].name() + "}";
      for (size_t at = file.find(key); at != std::string::npos; at = file.find(key, at))
        file.replace(at, key.size(), std::to_string(point[k]));
    }
    NamedTensors tensors;
    for (size_t k = 0; k < in.size(); ++k) tensors.emplace_back(names[k], in[k]);
    nn::save(file, tensors);
    return std::vector<HostTensor>{};
  };
  ctx().udf("save", fn, inputs, {}, domain, loc);
}

void Module::init_from(const std::string& path) {
  init_from(nn::load(path), cat("'", path, "'"));
}

void Module::init_from(const std::map<std::string, HostTensor>& tensors,
                       const std::string& source) {
  for (auto& [name, p] : named_parameters()) {
    auto it = tensors.find(name);
    if (it == tensors.end())
      throw UserError(
          cat(source, " has no tensor named '", name, "' (", tensors.size(), " tensors)"));
    p.set_initial(it->second, cat("tensor '", name, "' of ", source));
  }
}

// ---- activations -----------------------------------------------------------------------------

RT identity(const RT& x) {
  return x;
}
RT tanh(const RT& x) {
  return x.tanh();
}
RT relu(const RT& x) {
  return x.relu();
}
RT sigmoid(const RT& x) {
  return x.sigmoid();
}
RT gelu(const RT& x) {
  const double k = std::sqrt(2.0 / M_PI);
  RT inner = (x + x * x * x * 0.044715) * k;
  return x * 0.5 * (inner.tanh() + 1.0);
}
RT silu(const RT& x) {
  return x * x.sigmoid();
}

// ---- layers ----------------------------------------------------------------------------------

namespace {

void check_last(const RT& x, int64_t size, const char* what, Loc loc) {
  if (x.rank() == 0 || !x.shape()[x.rank() - 1].same(Expr(size)))
    throw UserError(cat(what, " at ", where(loc), ": expects inputs of shape (..., ", size,
                        ") but ", x.ctx().graph().op(x.op()).describe(), " has shape ",
                        x.shape().str()));
}

}  // namespace

Linear::Linear(Context& ctx, int64_t in, int64_t out, Steps dim, bool bias, Init ini, double gain,
               Loc loc)
    : Module(ctx, std::move(dim)), in_(in), out_(out) {
  if (in <= 0 || out <= 0)
    throw UserError(
        cat("Linear at ", where(loc), ": sizes must be positive (", in, ", ", out, ")"));
  const double b = 1.0 / std::sqrt(static_cast<double>(in));
  RT w0 = ini == Init::Orthogonal ? init::orthogonal(ctx, {out, in}, gain, loc)
                                  : init::uniform(ctx, {out, in}, -b, b, loc);
  weight_ = add_parameter("weight", w0, loc);
  if (bias) {
    RT b0 = ini == Init::Orthogonal ? init::zeros(ctx, {out}, loc)
                                    : init::uniform(ctx, {out}, -b, b, loc);
    bias_ = add_parameter("bias", b0, loc);
  }
}

RT Linear::forward(const RT& x, Loc loc) const {
  check_last(x, in_, "Linear", loc);
  RT y = x.matmul(weight_.transpose(0, 1, loc), loc);
  if (bias_.defined()) y = y + bias_;
  return y;
}

MLP::MLP(Context& ctx, std::vector<int64_t> sizes, Steps dim, Activation activation,
         Activation output_activation, bool bias, Linear::Init init, double output_gain,
         Loc loc)
    : Module(ctx, dim), act_(std::move(activation)), out_act_(std::move(output_activation)) {
  if (sizes.size() < 2)
    throw UserError(cat("MLP at ", where(loc), " needs at least an input and an output size"));
  for (size_t k = 0; k + 1 < sizes.size(); ++k) {
    const double gain = k + 2 == sizes.size() ? output_gain : std::numbers::sqrt2;
    layers_.push_back(add_module(
        std::to_string(k),
        std::make_shared<Linear>(ctx, sizes[k], sizes[k + 1], dim, bias, init, gain, loc)));
  }
}

RT MLP::forward(const RT& x, Loc loc) const {
  RT h = x;
  for (size_t k = 0; k < layers_.size(); ++k) {
    h = layers_[k]->forward(h, loc);
    const Activation& f = k + 1 < layers_.size() ? act_ : out_act_;
    if (f) h = f(h);
  }
  return h;
}

LayerNorm::LayerNorm(Context& ctx, int64_t size, Steps dim, double eps, bool affine, Loc loc)
    : Module(ctx, std::move(dim)), eps_(eps) {
  if (affine) {
    weight_ = add_parameter("weight", init::ones(ctx, {size}, loc), loc);
    bias_ = add_parameter("bias", init::zeros(ctx, {size}, loc), loc);
  }
}

RT LayerNorm::forward(const RT& x, Loc loc) const {
  if (weight_.defined()) check_last(x, weight_.type().shape.static_dims()[0], "LayerNorm", loc);
  RT mu = x.mean({-1}, true, loc);
  RT d = x - mu;
  RT var = d.square(loc).mean({-1}, true, loc);
  RT y = d / (var + eps_).sqrt(loc);
  if (weight_.defined()) y = y * weight_ + bias_;
  return y;
}

RMSNorm::RMSNorm(Context& ctx, int64_t size, Steps dim, double eps, bool affine, Loc loc)
    : Module(ctx, std::move(dim)), eps_(eps) {
  if (affine) weight_ = add_parameter("weight", init::ones(ctx, {size}, loc), loc);
}

RT RMSNorm::forward(const RT& x, Loc loc) const {
  if (weight_.defined()) check_last(x, weight_.type().shape.static_dims()[0], "RMSNorm", loc);
  RT ms = x.square(loc).mean({-1}, true, loc);
  RT y = x / (ms + eps_).sqrt(loc);
  if (weight_.defined()) y = y * weight_;
  return y;
}

Embedding::Embedding(Context& ctx, int64_t num, int64_t size, Steps dim, Loc loc)
    : Module(ctx, std::move(dim)), num_(num), size_(size) {
  weight_ = add_parameter("weight", init::normal(ctx, {num, size}, 0.0, 1.0, loc), loc);
}

RT Embedding::forward(const RT& indices, Loc loc) const {
  RT idx = indices.dtype() == DType::Int64 ? indices : indices.cast(DType::Int64, loc);
  if (idx.rank() == 1) return weight_.index_select(0, idx, loc);
  Shape out = idx.shape();
  out.dims.emplace_back(size_);
  return weight_.index_select(0, idx.flatten(loc), loc).reshape(out, loc);
}

Conv2d::Conv2d(Context& ctx, int64_t in_channels, int64_t out_channels, int64_t kernel, Steps dim,
               int64_t stride, int64_t padding, bool bias, Loc loc)
    : Module(ctx, std::move(dim)), out_(out_channels), stride_(stride), padding_(padding) {
  const double b = 1.0 / std::sqrt(static_cast<double>(in_channels * kernel * kernel));
  weight_ = add_parameter(
      "weight", init::uniform(ctx, {out_channels, in_channels, kernel, kernel}, -b, b, loc), loc);
  if (bias) bias_ = add_parameter("bias", init::uniform(ctx, {out_channels}, -b, b, loc), loc);
}

RT Conv2d::forward(const RT& x, Loc loc) const {
  RT y = x.conv2d(weight_, stride_, padding_, loc);
  if (bias_.defined()) y = y + bias_.reshape(Shape({out_, 1, 1}), loc);
  return y;
}

}  // namespace tempo::nn
