// A small text format for loop-nest programs (tempo loops optimize FILE):
//
//   # jacobi-like sweep: comments start with '#'
//   program sweep                        optional; default: the file's stem
//   array A 1024 1024                    name and sizes (doubles)
//   array B 1024 1024
//   statement S0 i j : 1 <= i < 1023 and 1 <= j < 1023
//     B[i][j] = 0.25 * (A[i-1][j] + A[i+1][j] + A[i][j-1] + A[i][j+1])
//   schedule 0 i 0 j 0                   optional, after a statement's body: its 2d+1 rows
//
// A statement is its name, its iterators (outermost first) and its domain's constraints (isl
// syntax over the iterators, concrete numbers), then its body on the next line: one C assignment
// `ARRAY[e]...[e] = expression` or `+=`, in which every array access has one affine index per
// dimension of a declared array. Without a schedule line statements run one after the other, each
// in its own loop nest in the order of its iterators. Reads and writes are found in the body.
// Every problem is a UserError naming the file and line.
#pragma once

#include <string>

#include "loops/program.h"

namespace tempo::loops {

// `source` names the text in errors (a path); `default_name` is the program's name unless a
// `program` line gives one.
Program parse_program(const std::string& text, const std::string& source,
                      const std::string& default_name);
Program read_program_file(const std::string& path);

}  // namespace tempo::loops
