// Loop-nest programs for learned loop optimization (Pearl: a policy picks loop transformations
// on a polyhedral program). A program is arrays of doubles, statements with concrete iteration
// domains, accesses and C bodies, and an original schedule in 2d+1 form: each statement's
// schedule is [s0, l0, s1, l1, ..., sd], scalar rows s (positions in the loop tree) alternating
// with loop rows l (affine expressions of its iterators).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tempo::loops {

struct Array {
  std::string name;
  std::vector<int64_t> sizes;
};

struct Statement {
  std::string name;               // a C identifier, unique in the program
  std::vector<std::string> vars;  // iterators, outermost first
  std::string domain;             // isl set, e.g. "{ S0[t,i] : 0 <= t < 4 and 1 <= i < 9 }"
  std::string body;               // C statement over vars and arrays, e.g. "B[i] = A[i-1] + A[i]"
  std::string reads, writes;      // isl union maps, e.g. "{ S0[t,i] -> A[i-1]; S0[t,i] -> A[i] }"
  std::vector<std::string> schedule;  // original 2d+1 rows, e.g. {"0", "t", "0", "i", "0"}
};

struct Program {
  std::string name;
  std::vector<Array> arrays;
  std::vector<Statement> statements;

  const Statement& statement(const std::string& name) const;  // UserError when absent
  std::vector<std::string> written_arrays() const;            // summed into the checksum
  std::string domains() const;                                // isl union set of all domains
  std::string reads() const;
  std::string writes() const;
  // Throws a one-line UserError on the first problem: no statements, a duplicate or non-C name,
  // a schedule that is not 2d+1 over the iterators, an isl string that does not parse.
  void validate() const;
};

// Builds programs from compact pieces: accesses are written "A[i-1,j]", one per list entry.
class ProgramBuilder {
 public:
  explicit ProgramBuilder(std::string name) { p_.name = std::move(name); }
  ProgramBuilder& array(const std::string& name, std::vector<int64_t> sizes);
  // `constraints` over vars (isl syntax, concrete numbers); `schedule` the 2d+1 rows.
  ProgramBuilder& statement(const std::string& name, std::vector<std::string> vars,
                            const std::string& constraints, const std::string& body,
                            const std::vector<std::string>& reads,
                            const std::vector<std::string>& writes,
                            std::vector<std::string> schedule);
  Program build() const;  // validated

 private:
  Program p_;
};

}  // namespace tempo::loops
