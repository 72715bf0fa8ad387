// Scheduler steps 5 and 6: isl's scheduler, and isl's AST converted to Tempo's.
#include <dlfcn.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "schedule/scheduler.h"
#include "util/resident.h"

namespace tempo::schedule::detail {

isl::schedule Scheduler::solve(const isl::union_set& domains, const isl::union_map& validity,
                               const isl::union_map& proximity) {
  isl_ctx* raw = ctx_.get();
  isl_options_set_schedule_whole_component(raw, opt_.whole_component ? 1 : 0);
  isl_options_set_schedule_serialize_sccs(raw, 0);
  isl_options_set_schedule_maximize_coincidence(raw, 0);
  isl_options_set_schedule_treat_coalescing(raw, 0);
  isl_options_set_schedule_separate_components(raw, 1);
  isl_ctx_set_max_operations(raw, opt_.max_isl_operations);
  isl_ctx_reset_operations(raw);
  isl_ctx_reset_error(raw);
  child_error_.clear();
  isl_schedule_constraints* sc = isl_schedule_constraints_on_domain(domains.copy());
  // Coalescing merges the many identical or adjacent pieces; it makes isl's ILPs smaller.
  if (!validity.is_null())
    sc = isl_schedule_constraints_set_validity(sc, validity.coalesce().release());
  if (!proximity.is_null())
    sc = isl_schedule_constraints_set_proximity(sc, proximity.coalesce().release());
  if (opt_.solve_in_child) {
    std::optional<std::string> reply;
    try {
      reply = solve_in_child(raw, sc);
    } catch (...) {  // a limit: the constraints still belong to this process
      isl_schedule_constraints_free(sc);
      throw;
    }
    if (reply) {
      isl_schedule_constraints_free(sc);
      const char status = (*reply)[0];
      if (status == 'Q') {
        isl_ctx_set_error(raw, isl_error_quota);
        check_quota("scheduling");
      }
      if (status == 'N') {
        child_error_ = reply->substr(1);
        return isl::schedule();
      }
      isl_schedule* s = isl_schedule_read_from_str(raw, reply->c_str() + 1);
      if (!s) throw InternalError("schedule: isl could not read back the child's schedule");
      return isl::manage(s);
    }
  }
  isl_schedule* s = isl_schedule_constraints_compute_schedule(sc);
  check_quota("scheduling");
  return s ? isl::manage(s) : isl::schedule();
}

namespace {

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// In the child: where an allocation fails under its memory limit, it answers 'M' and ends.
int reply_fd = -1;
[[noreturn]] void out_of_memory() {
  const char m = 'M';
  [[maybe_unused]] ssize_t n = ::write(reply_fd, &m, 1);
  ::_exit(0);
}
void* gmp_alloc(size_t n) {
  void* p = std::malloc(n);
  if (!p) out_of_memory();
  return p;
}
void* gmp_realloc(void* p, size_t, size_t n) {
  void* q = std::realloc(p, n);
  if (!q) out_of_memory();
  return q;
}
void gmp_free(void* p, size_t) { std::free(p); }

// The child's address space: what it inherits plus `limit`. isl's integers are GMP's, whose
// default allocator aborts when memory runs out: it gets one that answers 'M' (looked up at run
// time, as isl loads GMP; absent, a failed allocation ends the child with a signal).
void limit_child_memory(int64_t limit, int fd) {
  reply_fd = fd;
  using SetMemory = void (*)(void* (*)(size_t), void* (*)(void*, size_t, size_t),
                             void (*)(void*, size_t));
  if (auto set = reinterpret_cast<SetMemory>(::dlsym(RTLD_DEFAULT, "__gmp_set_memory_functions")))
    set(gmp_alloc, gmp_realloc, gmp_free);
  const rlim_t bytes = static_cast<rlim_t>(memory_use().address_space + limit);
  struct rlimit r {bytes, bytes};
  ::setrlimit(RLIMIT_AS, &r);
}

std::string mib(int64_t bytes) { return cat(bytes >> 20, " MiB"); }

}  // namespace

// isl's scheduler solves dense ILPs: on an RL training program (a few hundred statements) it
// takes ~100 MiB for a fraction of a second, and the allocator keeps those pages in the process
// for the rest of the run. A forked child solves instead and sends back isl's text of the
// schedule ('S' + text), 'N' + isl's message where there is none, 'Q' where the operation
// bound was hit, or 'M' where its memory limit was; the program's process keeps only the
// tensors' memory, and a fault inside isl becomes an error instead of a crash. nullopt where no
// child could be started.
std::optional<std::string> Scheduler::solve_in_child(isl_ctx* raw, isl_schedule_constraints* sc) {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  const int64_t memory =
      opt_.child_memory_limit > 0 ? opt_.child_memory_limit : default_child_memory_limit();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {  // the child (its own copy of sc): no destructors, exit handlers, stdio flush
    ::close(fds[0]);
    limit_child_memory(memory, fds[1]);
    isl_schedule* s = isl_schedule_constraints_compute_schedule(sc);
    std::string reply;
    if (isl_ctx_last_error(raw) == isl_error_quota) {
      reply = "Q";
    } else if (isl_ctx_last_error(raw) == isl_error_alloc) {
      reply = "M";
    } else if (!s) {
      const char* m = isl_ctx_last_error_msg(raw);
      reply = std::string("N") + (m ? m : "");
    } else {
      char* text = isl_schedule_to_str(s);
      reply = std::string("S") + (text ? text : "");
    }
    ::_exit(write_all(fds[1], reply) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string reply = read_reply(fds[0], pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!reply.empty() && reply[0] == 'M')
    limit_exceeded(cat("ran out of its memory limit of ", mib(memory)));
  if (WIFSIGNALED(status))
    throw InternalError(cat("schedule: isl's scheduler died with signal ", WTERMSIG(status), " (",
                            strsignal(WTERMSIG(status)), "; its memory limit is ", mib(memory),
                            ")"));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty() ||
      (reply[0] != 'S' && reply[0] != 'N' && reply[0] != 'Q'))
    throw InternalError("schedule: isl's scheduler process ended without a schedule");
  return reply;
}

// The child's whole reply; past the deadline, the child is killed and the limit reported.
std::string Scheduler::read_reply(int fd, pid_t pid) {
  std::string reply;
  char buf[1 << 16];
  for (;;) {
    int wait_ms = -1;
    if (deadline_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          *deadline_ - std::chrono::steady_clock::now());
      wait_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      ::kill(pid, SIGKILL);
      ::close(fd);
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      limit_exceeded(cat("went past its time limit of ", opt_.time_limit_s, " s"));
    }
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return reply;
}

void Scheduler::limit_exceeded(const std::string& what) {
  const isl_size relations = validity_.is_null() ? 0 : isl_union_map_n_map(validity_.get());
  throw UserError(cat(
      "schedule: isl's scheduler ", what, " on a program of ", num_statements_,
      " statements and ", relations, " dependence relations (", g_.num_ops(), " ops, ",
      g_.num_edges(), " edges). Try: the optimization passes on (fusion makes fewer statements), ",
      "proximity off, or a larger limit (CompileOptions::schedule_memory_limit / ",
      "schedule_time_limit; tempo train --schedule-memory / --schedule-time)"));
}

void Scheduler::check_quota(const char* phase) {
  if (isl_ctx_last_error(ctx_.get()) == isl_error_quota) {
    isl_ctx_reset_error(ctx_.get());
    throw UserError(cat("schedule: ", phase, " exceeded the bound of ", opt_.max_isl_operations,
                        " isl operations (ScheduleOptions::max_isl_operations); the program's ",
                        "dependences are too complex to schedule within it"));
  }
}

// No schedule: find the dependence cycle that cannot be satisfied by scheduling each cyclic
// component of the SDG alone.
[[noreturn]] void Scheduler::report_cycle() {
  std::string detail = isl_last_error_msg();
  auto comps = cyclic_components(g_);
  for (const auto& comp : comps) {
    std::set<OpId> in(comp.begin(), comp.end());
    isl::union_set doms;
    isl::union_map val;
    for (OpId id : comp)
      doms = doms.is_null() ? isl::union_set(stmt_domain_[id])
                            : doms.unite(isl::union_set(stmt_domain_[id]));
    for (const Edge& e : g_.edges()) {
      if (!in.count(e.sink) || !in.count(e.source)) continue;
      isl::union_map u = to_union(deps_[e.id].reverse());
      val = val.is_null() ? u : val.unite(u);
    }
    if (!solve(doms, val, isl::union_map()).is_null()) continue;
    std::string ops;
    for (OpId id : comp) ops += cat("\n  ", g_.op(id).describe());
    throw UserError(cat("schedule: the dependences of these RTs form a cycle that no execution ",
                        "order satisfies (a point depends on itself through them):", ops));
  }
  std::string all;
  for (const auto& comp : comps)
    for (OpId id : comp) all += cat("\n  ", g_.op(id).describe());
  throw UserError(cat("schedule: isl found no schedule for the program",
                      detail.empty() ? "" : cat(" (", detail, ")"),
                      all.empty() ? "" : cat("; RTs in dependence cycles:", all)));
}

std::string Scheduler::isl_last_error_msg() {
  if (!child_error_.empty()) return child_error_;
  const char* m = isl_ctx_last_error_msg(ctx_.get());
  return m ? m : "";
}

Schedule Scheduler::generate(const isl::schedule& sched) {
  isl_ctx* raw = ctx_.get();
  isl_ctx_reset_operations(raw);
  isl_options_set_ast_build_atomic_upper_bound(raw, 1);
  isl_options_set_ast_build_detect_min_max(raw, 1);
  // The context: every bound is at least 1.
  std::string ctx_text = "[";
  for (size_t k = 0; k < params_.size(); ++k) ctx_text += (k ? ", " : "") + params_[k];
  ctx_text += "] -> { : ";
  for (size_t k = 0; k < params_.size(); ++k) ctx_text += (k ? " and " : "") + params_[k] + " >= 1";
  if (params_.empty()) ctx_text += "true";
  ctx_text += " }";
  isl::set context(ctx_, ctx_text);
  isl_ast_build* build = isl_ast_build_from_context(context.release());
  isl_ast_node* node = isl_ast_build_node_from_schedule(build, sched.copy());
  isl_ast_build_free(build);
  check_quota("generating the loop nest");
  if (!node)
    throw InternalError(cat("schedule: isl AST generation failed: ", isl_last_error_msg()));
  isl::ast_node ast = isl::manage(node);
  for (const auto& p : params_) ids_.emplace_back(p, Expr::bound(p));
  Schedule out;
  out.root = convert(ast);
  for (const auto& name : iterator_names_) {
    std::string bound = name;
    bound[0] = 'C';
    out.iterators.push_back(Dim(name, bound));
  }
  return out;
}

StmtPtr Scheduler::make_seq(std::vector<StmtPtr> body) {
  if (body.size() == 1) return body[0];
  auto s = std::make_shared<Stmt>();
  s->kind = StmtKind::Seq;
  for (auto& b : body) {
    if (b->kind == StmtKind::Seq) {
      s->body.insert(s->body.end(), b->body.begin(), b->body.end());
    } else {
      s->body.push_back(b);
    }
  }
  return s;
}

StmtPtr Scheduler::convert(const isl::ast_node& node) {
  switch (isl_ast_node_get_type(node.get())) {
    case isl_ast_node_block: {
      isl::ast_node_list kids = node.as<isl::ast_node_block>().children();
      std::vector<StmtPtr> body;
      for (int k = 0; k < static_cast<int>(kids.size()); ++k) body.push_back(convert(kids.at(k)));
      return make_seq(std::move(body));
    }
    case isl_ast_node_for: {
      auto f = node.as<isl::ast_node_for>();
      std::string it = f.iterator().as<isl::ast_expr_id>().id().name();
      Expr init = to_expr(f.init());
      if (f.is_degenerate()) {
        // A single iteration: substitute the iterator's value instead of looping.
        ids_.emplace_back(it, init);
        StmtPtr body = convert(f.body());
        ids_.pop_back();
        return body;
      }
      if (std::find(iterator_names_.begin(), iterator_names_.end(), it) == iterator_names_.end())
        iterator_names_.push_back(it);
      auto s = std::make_shared<Stmt>();
      s->kind = StmtKind::For;
      s->iterator = Expr::var(it);
      s->init = init;
      ids_.emplace_back(it, s->iterator);
      s->cond = to_expr(f.cond());
      s->step = to_expr(f.inc());
      StmtPtr body = convert(f.body());
      ids_.pop_back();
      if (body->kind == StmtKind::Seq) {
        s->body = body->body;
      } else {
        s->body.push_back(body);
      }
      return s;
    }
    case isl_ast_node_if: {
      auto i = node.as<isl::ast_node_if>();
      auto s = std::make_shared<Stmt>();
      s->kind = StmtKind::If;
      s->cond = to_expr(i.cond());
      StmtPtr then = convert(i.then_node());
      s->body = then->kind == StmtKind::Seq ? then->body : std::vector<StmtPtr>{then};
      if (i.has_else_node()) {
        StmtPtr other = convert(i.else_node());
        s->else_body = other->kind == StmtKind::Seq ? other->body : std::vector<StmtPtr>{other};
      }
      return s;
    }
    case isl_ast_node_mark:
      return convert(node.as<isl::ast_node_mark>().node());
    case isl_ast_node_user:
      return convert_user(node.as<isl::ast_node_user>().expr());
    default:
      throw InternalError("schedule: unexpected isl AST node");
  }
}

StmtPtr Scheduler::convert_user(const isl::ast_expr& call) {
  auto op = call.as<isl::ast_expr_op>();
  std::string name = op.arg(0).as<isl::ast_expr_id>().id().name();
  std::vector<Expr> point;
  for (unsigned k = 1; k < op.n_arg(); ++k) point.push_back(to_expr(op.arg(k)));
  std::vector<StmtPtr> body;
  auto add = [&](StmtKind kind, OpId id, int out) {
    TEMPO_ASSERT(point.size() == g_.op(id).domain.size(), "point arity of ", name);
    auto s = std::make_shared<Stmt>();
    s->kind = kind;
    s->op = id;
    s->output = out;
    s->point = point;
    body.push_back(s);
  };
  if (auto it = exec_stmts_.find(name); it != exec_stmts_.end()) {
    const Group& grp = groups_[it->second];
    for (const Group::Load& l : grp.loads) {
      // The read points in the statement's iterators: phi over the reader's domain variables.
      std::vector<std::pair<Expr, Expr>> at;
      const Dims& dims = g_.op(l.reader).domain;
      for (size_t k = 0; k < dims.size(); ++k) at.emplace_back(dims[k].var, point[k]);
      auto s = std::make_shared<Stmt>();
      s->kind = StmtKind::Load;
      s->op = l.op;
      s->output = l.output;
      for (const Expr& x : phi_entries(l.phi)) s->point.push_back(sym::substitute(x, at));
      body.push_back(s);
    }
    const size_t num_loads = body.size();
    for (OpId id : grp.members) add(StmtKind::Exec, id, 0);
    for (const auto& [id, out] : grp.local_frees) add(StmtKind::Dealloc, id, out);
    for (const auto& [id, out] : grp.evicts) add(StmtKind::Evict, id, out);
    // What was loaded goes back (its host copy is kept: no copy), so that the device holds one
    // reader's points at a time (TEMPO's second eviction).
    for (size_t k = 0; k < num_loads; ++k) {
      auto s = std::make_shared<Stmt>(*body[k]);
      s->kind = StmtKind::Evict;
      body.push_back(s);
    }
  } else if (auto sw = swap_stmts_.find(name); sw != swap_stmts_.end()) {
    add(StmtKind::Evict, sw->second.first, sw->second.second);
  } else {
    auto d = dealloc_stmts_.find(name);
    TEMPO_ASSERT(d != dealloc_stmts_.end(), "unknown statement ", name);
    for (const auto& [id, out] : d->second) add(StmtKind::Dealloc, id, out);
  }
  return make_seq(std::move(body));
}

}  // namespace tempo::schedule::detail
