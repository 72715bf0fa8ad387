// Test helper: expects a UserError whose message contains every fragment.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/error.h"

namespace tempo::testing {

template <typename F>
void expect_user_error(F f, std::vector<std::string> fragments) {
  try {
    f();
    ADD_FAILURE() << "expected a UserError";
  } catch (const UserError& e) {
    std::string msg = e.what();
    for (const auto& frag : fragments)
      EXPECT_NE(msg.find(frag), std::string::npos) << "message: " << msg << "\nmissing: " << frag;
  }
}

// The message of the UserError that f throws; empty if it throws none.
template <typename F>
std::string user_error_of(F&& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace tempo::testing
