// Built-in example programs, shown by `tempo show` and exercised by the tests.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "api/tempo.h"
#include "driver/compile.h"

namespace tempo::apps {

struct Example {
  std::string name;
  std::string description;
  // Builds the program in ctx and returns the bounds it runs with.
  std::function<Bounds(Context& ctx)> build;
};

const std::vector<Example>& examples();
const Example& find_example(const std::string& name);  // UserError listing names if unknown

}  // namespace tempo::apps
